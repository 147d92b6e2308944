"""Cycle costs of instructions that stream tiles through VectorE, ScalarE or GpSimd.

Each rule returns engine cycles for one instruction, from the Beta-1 formulas (Hardware §11 table)
with N = elements per partition; `max(MIN_II, ·)` is applied to the streaming part of every
rule (Hardware §11: MIN_II is the minimum initiation interval of all three engines).
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil

from nkirt.cost.shapes import InstructionShape, OperandShape
from nkirt.cost.tables import ACT_READ_ACCUMULATOR, GPSIMD_START, MIN_II, TargetTable

Rule = Callable[[InstructionShape, TargetTable], float]
RULES: dict[str, Rule] = {}


def rule(*ops: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn

    return register


def stream(inst: InstructionShape, passes: float, speedup: float = 1.0) -> float:
    """max(MIN_II, passes·N / speedup) cycles; an innermost stride > 16 B halves the access
    bandwidth (Hardware §8, ARCH2), doubling the streaming time."""
    cycles = passes * inst.free_elems() / speedup
    if any(o.on_chip and o.wide_stride for o in inst.operands.values()):
        cycles *= 2
    return max(MIN_II, ceil(cycles))


def _fast_dtypes(operands: list[OperandShape], table: TargetTable) -> bool:
    return bool(operands) and all(o.dtype in table.fast_mode_dtypes for o in operands)


def _copy_speedup(inst: InstructionShape, engine: str, table: TargetTable) -> float:
    """Hardware §5 (ARCH3): VectorE 4× when data and dst are SBUF 2-byte floats with unit innermost
    stride, 2× when a stride is not 1 or one side is PSUM; Hardware §6: v4 ScalarE 2× mode."""
    # per-partition scalar operands (fp32 by rule) do not stream and do not count
    data = [inst.operands[n] for n in ("data", "src", "dst") if n in inst.operands]
    if not _fast_dtypes(data, table):
        return 1.0
    if engine == "vector" and table.vector_perf_modes:
        all_sbuf = all(o.buffer == "sbuf" for o in data)
        return 4.0 if all_sbuf and all(o.unit_stride for o in data) else 2.0
    if engine == "scalar" and table.scalar_2x_mode:
        return 2.0
    return 1.0


@rule("tensor_copy", "tensor_scalar")
def _copy_like(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N); ScalarE and VectorE alike (B1ISA)
    return stream(inst, 1, _copy_speedup(inst, inst.engine, table))


@rule("memset")
def _memset(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N/2) for a zero fill of bf16/fp16, else max(MIN_II, N)
    dst = inst.operands["dst"]
    value = inst.param("value", 0)
    zero_16bit = dst.dtype in ("bfloat16", "float16") and value in (0, 0.0)
    return stream(inst, 0.5 if zero_16bit else 1)


@rule("tensor_copy_predicated")
def _copy_predicated(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N) if src or predicate is in PSUM, max(MIN_II, 2N) if both SBUF
    sides = [inst.operands[n] for n in ("src", "predicate") if n in inst.operands]
    return stream(inst, 1 if any(o.buffer == "psum" for o in sides) else 2)


@rule("tensor_tensor")
def _tensor_tensor(inst: InstructionShape, table: TargetTable) -> float:
    data = [inst.operands[n] for n in ("data1", "data2") if n in inst.operands]
    buffers = sorted(o.buffer for o in data)
    if inst.engine == "vector":
        # Hardware §11: 1× when one input is PSUM and the other SBUF
        if buffers == ["psum", "sbuf"]:
            return stream(inst, 1)
        all_sbuf = buffers == ["sbuf", "sbuf"]
        # Hardware §5 (ARCH3): 2× perf mode with both inputs SBUF and every operand bf16/fp16
        streamed = data + [inst.operands["dst"]]
        if table.vector_perf_modes and all_sbuf and _fast_dtypes(streamed, table):
            return stream(inst, 2, 2.0)
        # Hardware §11: 1× for all-bf16 SBUF add/multiply/subtract with unit stride
        bf16 = all(o.dtype == "bfloat16" for o in inst.operands.values())
        unit = all(o.unit_stride for o in inst.operands.values())
        if all_sbuf and bf16 and unit and inst.attrs.get("op") in ("add", "multiply", "subtract"):
            return stream(inst, 1)
    # Hardware §5/§11: two input tiles take 2N
    return stream(inst, 2)


@rule("scalar_tensor_tensor")
def _scalar_tensor_tensor(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: N if data and operand1 are bf16, (subtract, multiply) and N even; else 2N
    pair = [inst.operands[n] for n in ("data", "operand1") if n in inst.operands]
    fast = (
        all(o.dtype == "bfloat16" for o in pair)
        and inst.attrs.get("op0") == "subtract"
        and inst.attrs.get("op1") == "multiply"
        and inst.free_elems() % 2 == 0
    )
    return stream(inst, 1 if fast else 2)


@rule("tensor_scalar_reduce", "activation_reduce")
def _with_reduce_readout(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N) + MIN_II
    return stream(inst, 1) + MIN_II


@rule("activation", "activate2")
def _activation(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N); scale and bias are free (Hardware §6); a bound reduce_res adds the
    # ActReadAccumulator read-out (Hardware §6/§11, ARCH2)
    readout = ACT_READ_ACCUMULATOR if "reduce_res" in inst.operands else 0
    return stream(inst, 1) + readout


@rule("tensor_tensor_scan")
def _scan(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 2)  # Hardware §11: max(MIN_II, 2N)


@rule("tensor_reduce")
def _tensor_reduce(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: N/2 if bf16 in and out and op in {add, max}; else N
    bf16 = all(o.dtype == "bfloat16" for o in inst.operands.values())
    fast = bf16 and inst.attrs.get("op") in ("add", "maximum")
    return stream(inst, 0.5 if fast else 1)


@rule("bn_aggr")
def _bn_aggr(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 13 / 3)  # Hardware §11: max(MIN_II, 13·N/3)


@rule("reciprocal")
def _reciprocal(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 8)  # Hardware §11: VectorE reciprocal max(MIN_II, 8N)


@rule("exponential")
def _exponential(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 1, 4.0)  # Hardware §5 (ARCH4): 4× ScalarE exp throughput


@rule("quantize_mx")
def _quantize_mx(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 1, 4.0)  # Hardware §5 (ARCH4): 4 elements per partition per cycle


@rule("rand2")
def _rand2(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 1, 4.0)  # Hardware §5 (ARCH4): 4 × 32-bit values per lane per cycle


@rule(
    "dropout",
    "bn_stats",
    "nc_stream_shuffle",
    "range_select",
    "select_reduce",
    "max8",
    "nc_find_index8",
    "nc_match_replace8",
    "tensor_scalar_cumulative",
    "tensor_partition_reduce",
    "iota",
    "affine_select",
    "rng",
    "rand_set_state",
    "rand_get_state",
    "sequence_bounds",
    "nonzero_with_count",
)
def _one_pass(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: max(MIN_II, N) for dropout, bn_stats, nc_stream_shuffle, range_select, max8,
    # nc_find_index8, nc_match_replace8 ("min" in the docs read as max); iota and affine_select
    # are GPSIMD_START + N, the start-up being the GpSimd pipeline latency (see `latency`).
    # Instructions without a published formula (select_reduce, tensor_scalar_cumulative,
    # tensor_partition_reduce, rng, rand_*_state, sequence_bounds, nonzero_with_count) are
    # charged one pass over their largest tile, the cost of every one-input instruction.
    return stream(inst, 1)


@rule("set_rng_seed")
def _set_rng_seed(inst: InstructionShape, table: TargetTable) -> float:
    return MIN_II  # a one-element write: the minimum initiation interval (Hardware §11)


@rule("nc_transpose")
def _vector_transpose(inst: InstructionShape, table: TargetTable) -> float:
    return stream(inst, 1)  # Hardware §11: VectorE nc_transpose max(MIN_II, N)


@rule("local_gather")
def _local_gather(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §11: 150 + (V·e)/C, C = ((28 + 4e)/(4e)) / min(4/dtype_bytes, e); the 150 is the
    # GpSimd start-up, charged as latency
    e = int(inst.param("num_elem_per_idx", 1))
    index = inst.operands.get("index")
    valid = inst.param("num_valid_indices") or (index.free_elems if index else 1)
    src = inst.operands.get("src_buffer") or inst.operands["dst"]
    c = ((28 + 4 * e) / (4 * e)) / min(4 / src.itemsize, e)
    return max(MIN_II, ceil(valid * e / c))


@rule("nc_n_gather")
def _n_gather(inst: InstructionShape, table: TargetTable) -> float:
    # ISA §5.4: lowers to ceil(elements/512) GpSimd instructions; each is charged one pass
    # over its 512 elements plus a GpSimd start-up (Hardware §7, GPSIMD_START) after the first
    pieces = ceil(inst.free_elems() / 512)
    return stream(inst, 1) + (pieces - 1) * GPSIMD_START


@rule("topk")
def _topk(inst: InstructionShape, table: TargetTable) -> float:
    # Hardware §7/§11 (ISA): 4n + K GpSimd cycles per partition
    n = int(inst.param("n", inst.operands["src"].free_elems))
    k = inst.operands["val_dst"].free_elems if "val_dst" in inst.operands else 1
    return 4 * n + k
