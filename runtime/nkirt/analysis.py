"""A run in Neuron Explorer's words: its `Summary` metrics, the performance bounds, the
critical path.

Summary keys are the field names of Explorer's `Summary` table (profile schema reference,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-explorer/profile-schema-reference.html),
times in seconds as there. The bounds follow AWS's performance-bounds method
(https://github.com/aws-neuron/neuron-agentic-development, skill `neuron-nki-profile-querying`,
`references/performance-bounds.md`). The critical path is the chain of instances, each of which
could start only when the previous one released it (semaphore wait or in-order queue), that
ends at the latest completion.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from nkirt.cost import DmaPlan
from nkirt.cost.tables import DMA_ENGINES, PARTITIONS, TargetTable
from nkirt.executor import STALL_SEMAPHORE, DynLoop, Loop, StaticInstruction
from nkirt.profile import busy_union
from nkirt.program import QUEUES

COMPUTE_ENGINES = ("tensor", "vector", "scalar", "gpsimd")
#: An engine busier than this share of the run is a bottleneck; below it for every engine the
#: run is latency-bound (waits along a dependency chain, not throughput, set its length).
BOTTLENECK_SHARE = 0.5
FP8 = frozenset({"float8_e4m3", "float8_e4m3fn", "float8_e5m2"})
#: Segments of the critical path kept in the profile (the rest are counted).
CRITICAL_PATH_SEGMENTS = 200


def peak_flops(table: TargetTable) -> float:
    """TensorE peak, FLOP/s: rows · columns · 2 · clock (Explorer's `tensor_engine_max_ops`)."""
    return PARTITIONS * PARTITIONS * 2 * table.tensor_ghz * 1e9


def dma_peak_bytes_per_s(table: TargetTable) -> float:
    """Explorer's `dma_ddr_bandwidth`: all 16 DMA engines of one NeuronCore."""
    return DMA_ENGINES * table.dma_engine_bytes_per_ns * 1e9


def instruction_flops(inst: StaticInstruction, table: TargetTable) -> tuple[float, float, bool]:
    """(hardware FLOPs, BF16-equivalent FLOPs, is a transpose) of one instance of a TensorE
    instruction: 2 · rows · columns · moving elements (Explorer's `hardware_flops`)."""
    ops = {ap.name: ap.shape for ap in inst.inputs}
    if inst.op == "nc_transpose":
        data = ops.get("data")
        if data is None:
            return 0.0, 0.0, True
        flops = 2.0 * data.partitions * data.free_elems * data.partitions
        dtypes = {data.dtype}
        transpose = True
    else:
        stationary, moving = ops.get("stationary"), ops.get("moving")
        if stationary is None or moving is None:
            return 0.0, 0.0, False
        flops = 2.0 * stationary.partitions * stationary.free_elems * moving.free_elems
        if inst.op == "nc_matmul_mx":
            flops *= 4  # four MX elements packed per partition word
        elif inst.attrs.get("perf_mode") == "double_row":
            flops /= 2  # [K, 2, M] x [K, 2, N] folds K = 256 over 128 partitions
        dtypes = {stationary.dtype, moving.dtype}
        transpose = bool(inst.attrs.get("is_transpose"))
    # adjusted_hardware_flops: fp32 4×, fp8 0.5× on trn2/trn3 (1× on trn1), others 1×
    factor = 1.0
    if "float32" in dtypes:
        factor = 4.0
    elif dtypes <= FP8 and table.nc_version >= 3:
        factor = 0.5
    return flops, flops * factor, transpose


def explorer_summary(
    instructions: list[StaticInstruction],
    engines: dict[str, dict[str, Any]],
    total_ns: float,
    table: TargetTable,
    dma_data: list[tuple[float, float]],
    io_bytes: int,
    traffic: dict[str, Any],
) -> dict[str, Any]:
    """Explorer `Summary` metrics of a run (times in seconds, percentages 0–100), from the
    static instructions' totals, the per-engine busy unions of the profile (`engines`) and
    the bytes moved per HBM tensor (`traffic`, `hbm_traffic`)."""
    total = total_ns * 1e-9

    def pct(seconds: float) -> float:
        return 100.0 * seconds / total if total else 0.0

    hw = adjusted_hw = transpose = adjusted_transpose = 0.0
    matmuls = 0
    transfers = transfer_bytes = 0
    for inst in instructions:
        if not inst.count:
            continue
        if inst.engine == "tensor":
            flops, adjusted, is_transpose = instruction_flops(inst, table)
            hw += flops * inst.count
            adjusted_hw += adjusted * inst.count
            if is_transpose:
                transpose += flops * inst.count
                adjusted_transpose += adjusted * inst.count
            matmuls += inst.count if inst.op != "nc_transpose" else 0
        elif isinstance(inst.cost, DmaPlan):
            transfers += inst.count
            transfer_bytes += inst.cost.bytes * inst.count
    hbm_read = sum(t["read_bytes"] for t in traffic["tensors"])
    hbm_write = sum(t["written_bytes"] for t in traffic["tensors"])
    peak = peak_flops(table)
    dma_peak = dma_peak_bytes_per_s(table)
    hbm_bytes = hbm_read + hbm_write
    dma_active = busy_union(dma_data) * 1e-9
    out: dict[str, Any] = {
        "total_time": total,
        "neuroncore_cycle_count": round(total * table.base_ghz * 1e9) if table.base_ghz else None,
        # NKI kernels have no HLO model: model FLOPs are the non-transpose hardware FLOPs
        "model_flops": hw - transpose,
        "hardware_flops": hw,
        "transpose_flops": transpose,
        "adjusted_hardware_flops": adjusted_hw,
        "adjusted_transpose_flops": adjusted_transpose,
        "mm_arithmetic_intensity": (hw - transpose) / hbm_bytes if hbm_bytes else 0.0,
        "peak_flops_bandwidth_ratio": peak / dma_peak,
        "dma_active_time": dma_active,
        "dma_active_time_percent": pct(dma_active),
        "dma_transfer_count": transfers,
        "dma_transfer_total_bytes": transfer_bytes,
        "dma_transfer_average_bytes": transfer_bytes / transfers if transfers else 0.0,
        "hbm_read_bytes": hbm_read,
        "hbm_write_bytes": hbm_write,
        "inputs_outputs_weights_size_bytes": io_bytes,
        "mbu_estimated_percent": pct(hbm_bytes / (table.hbm_stack_gbps * 1e9)),
        "mfu_estimated_percent": pct((hw - transpose) / peak),
        "mfu_max_achievable_estimated_percent": (
            min(100.0, 100.0 * ((hw - transpose) / hbm_bytes) / (peak / dma_peak))
            if hbm_bytes
            else 100.0
        ),
        "hfu_estimated_percent": pct(hw / peak),
    }
    for engine in COMPUTE_ENGINES:
        active = engines[engine]["executing_ns"] * 1e-9
        instruction_time = sum(i.busy_ns for i in instructions if i.engine == engine)
        out[f"{engine}_engine_instruction_time"] = instruction_time * 1e-9
        out[f"{engine}_engine_active_time"] = active
        out[f"{engine}_engine_active_time_percent"] = pct(active)
        out[f"{engine}_engine_instruction_count"] = engines[engine]["instructions"]
    out["matmul_instruction_count"] = matmuls
    return out


def performance_bounds(summary: dict[str, Any], table: TargetTable) -> dict[str, Any]:
    """AWS's performance-bounds table from Summary metrics (seconds), with the bottleneck
    engine (None when no engine is active more than half the time: latency-bound) and the
    speed-up each bound leaves (`bn_speedup`)."""
    total = summary["total_time"]
    peak = peak_flops(table)
    dma_peak = dma_peak_bytes_per_s(table)
    engines = {
        "tensor": summary["tensor_engine_active_time"],
        "vector": summary["vector_engine_active_time"],
        "scalar": summary["scalar_engine_active_time"],
        "gpsimd": summary["gpsimd_engine_active_time"],
        "dma": summary["dma_active_time"],
    }
    slowest = max(engines, key=engines.get)
    bounds = {
        "memory_bound": summary["dma_active_time"],
        "memory_bound_ideal": summary["dma_transfer_total_bytes"] / dma_peak,
        "memory_bound_ideal_no_reloads": summary["inputs_outputs_weights_size_bytes"] / dma_peak,
        "compute_bound": summary["tensor_engine_active_time"],
        "compute_bound_ideal_flops": summary["adjusted_hardware_flops"] / peak,
        "compute_bound_ideal_useful_flops": (
            summary["adjusted_hardware_flops"] - summary["adjusted_transpose_flops"]
        )
        / peak,
        "perfect_pipeline": engines[slowest],
    }
    speedup = {}
    for name, value in bounds.items():
        if name == "perfect_pipeline":
            speedup[name] = total / value if value else None
            continue
        family = "dma" if name.startswith("memory") else "tensor"
        others = max(v for e, v in engines.items() if e != family)
        limit = max(value, others)
        speedup[name] = total / limit if limit else None
    busiest_share = engines[slowest] / total if total else 0.0
    return {
        **bounds,
        "gaps": bound_gaps(summary, bounds),
        "engine_active_time": engines,
        "bottleneck_engine": slowest if busiest_share > BOTTLENECK_SHARE else None,
        "latency_bound": busiest_share <= BOTTLENECK_SHARE,
        "busiest_engine": slowest,
        "busiest_engine_share": busiest_share,
        "bn_speedup": speedup,
    }


def bound_gaps(summary: dict[str, Any], bounds: dict[str, float]) -> dict[str, float]:
    """The gaps between consecutive bounds of a family (seconds), each the overhead of one
    category as the performance-bounds method reads them: memory family `dma_idle` (total →
    memory_bound), `dma_inefficiency` (→ memory_bound_ideal), `excess_traffic` (→ no
    reloads); compute family `te_idle` (total → compute_bound), `te_underutilization` (→ ideal
    flops), `transpose` (→ ideal useful flops); `pipeline_serialization` (total → perfect
    pipeline). Plus the shares the method quotes beside them: excess bytes of the traffic,
    transpose flops of the hardware flops."""
    total = summary["total_time"]
    traffic = summary["dma_transfer_total_bytes"]
    flops = summary["adjusted_hardware_flops"]
    return {
        "dma_idle": total - bounds["memory_bound"],
        "dma_inefficiency": bounds["memory_bound"] - bounds["memory_bound_ideal"],
        "excess_traffic": bounds["memory_bound_ideal"] - bounds["memory_bound_ideal_no_reloads"],
        "te_idle": total - bounds["compute_bound"],
        "te_underutilization": bounds["compute_bound"] - bounds["compute_bound_ideal_flops"],
        "transpose": bounds["compute_bound_ideal_flops"]
        - bounds["compute_bound_ideal_useful_flops"],
        "pipeline_serialization": total - bounds["perfect_pipeline"],
        "excess_traffic_share_of_bytes": (
            (traffic - summary["inputs_outputs_weights_size_bytes"]) / traffic if traffic else 0.0
        ),
        "transpose_share_of_flops": summary["adjusted_transpose_flops"] / flops if flops else 0.0,
    }


def critical_chain(
    instructions: list[StaticInstruction], records: list[tuple]
) -> tuple[list[int], list[str]]:
    """Record numbers of the critical path, first to last, and how each step after the first
    was released ("semaphore" or "queue")."""
    completions = list(map(itemgetter(3), records))
    n = completions.index(max(completions))  # the first record that completes last
    chain, how = [n], []
    while True:
        _, start, _, _, _, producer, stall, queue = records[n]
        if start <= 0:
            break
        if stall == STALL_SEMAPHORE and producer >= 0:
            n, kind = producer, "semaphore"
        else:
            # the previous instance of its queue (the chain only goes back: every record is
            # looked at once at most)
            before = n - 1
            while before >= 0 and records[before][7] != queue:
                before -= 1
            if before < 0:
                break
            n, kind = before, "queue"
        chain.append(n)
        how.append(kind)
    chain.reverse()
    how.reverse()
    return chain, how


def critical_path(
    instructions: list[StaticInstruction],
    records: list[tuple],
    iterations: Callable[[set[int]], dict[int, dict[str, int]]],
) -> dict[str, Any]:
    """The chain of instances that sets the latency, grouped into segments of consecutive
    instances of one instruction.

    From the instance that completes last, each step goes back to what released it: the
    producer it waited for on a semaphore, otherwise the previous instance of its queue. Every
    step is charged the time from its predecessor's release to its own, so the segments' times
    add up to the latency."""
    if not records:
        return {
            "total_ns": 0.0,
            "steps": 0,
            "by_instruction": [],
            "segments": [],
            "more_segments": 0,
        }
    chain, how = critical_chain(instructions, records)
    # release time of each step: a semaphore waiter is released at the producer's completion,
    # the next instance of a queue when the queue frees (its start)
    releases = []
    for i, n in enumerate(chain):
        if i == len(chain) - 1:
            releases.append(records[n][3])
        elif how[i] == "semaphore":
            releases.append(records[n][3])
        else:
            releases.append(records[chain[i + 1]][1])
    # [instruction, first record, last record, count, time, released by] per segment
    runs: list[list] = []
    before = 0.0
    for i, n in enumerate(chain):
        # by source instruction: an unrolled loop's copies of one instruction group together
        index = instructions[records[n][0]].site
        share = releases[i] - before
        before = releases[i]
        if runs and runs[-1][0] == index:
            run = runs[-1]
            run[2] = n
            run[3] += 1
            run[4] += share
            continue
        runs.append([index, n, n, 1, share, how[i - 1] if i else "start"])
    tensors: dict[int, str] = {}  # per instruction (a long chain revisits a few)

    def segment(index: int, count: int, time_ns: float, released_by: str) -> dict[str, Any]:
        inst = instructions[index]
        named = tensors.get(index)
        if named is None:
            named = tensors[index] = _tensors(inst)
        return {
            "op": inst.op,
            "engine": inst.engine,
            "queue": QUEUES[inst.queue],
            "loc": inst.where,
            "stack": list(inst.stack),
            "tensors": named,
            "count": count,
            "time_ns": time_ns,
            "released_by": released_by,
        }

    segments = [
        {"_first": first, "_last": last, **segment(index, count, time_ns, released_by)}
        for index, first, last, count, time_ns, released_by in runs[:CRITICAL_PATH_SEGMENTS]
    ]
    # the same, summed per instruction (source line), largest share first
    totals: dict[int, dict[str, Any]] = {}
    for index, first, last, count, time_ns, _ in runs:
        row = totals.get(index)
        if row is None:
            row = totals[index] = segment(index, 0, 0.0, "")
            del row["released_by"]
            row["_first"] = first
        row["count"] += count
        row["time_ns"] += time_ns
        row["_last"] = last
    by_instruction = sorted(totals.values(), key=lambda r: r["time_ns"], reverse=True)
    kept = segments
    wanted = {s["_first"] for s in kept} | {s["_last"] for s in kept}
    wanted |= {r["_first"] for r in by_instruction} | {r["_last"] for r in by_instruction}
    envs = iterations(wanted)
    for row in (*kept, *by_instruction):
        row["first_iteration"] = envs.get(row.pop("_first"), {})
        row["last_iteration"] = envs.get(row.pop("_last"), {})
    return {
        "total_ns": records[chain[-1]][3],
        "steps": len(chain),
        "by_instruction": by_instruction,
        "segments": kept,
        "more_segments": len(runs) - len(kept),
    }


def _tensors(inst: StaticInstruction) -> str:
    """`src → dst` tensor names of a DMA, the operand tensors of anything else."""
    reads = [ap.tensor.name for ap in inst.inputs]
    writes = [ap.tensor.name for ap in inst.outputs]
    return f"{', '.join(dict.fromkeys(reads))} → {', '.join(dict.fromkeys(writes))}"


def iteration_text(env: dict[str, int]) -> str:
    """Loop variables as `name=value`, the one spelling of checks, profiles and faults."""
    return ", ".join(f"{var}={value}" for var, value in env.items())


def enclosing_loops(tree: list) -> dict[int, tuple[tuple[str, str, int | None], ...]]:
    """Per instruction index, the loops the program keeps around it, outermost first:
    (variable, source name, trip count; None for a loop counted at run time)."""
    found: dict[int, tuple] = {}

    def walk(nodes: list, outer: tuple) -> None:
        for node in nodes:
            if type(node) is Loop:
                walk(node.body, (*outer, (node.var, node.name, len(node.values))))
            elif type(node) is DynLoop:
                walk(node.body, (*outer, (node.var, node.name, None)))
            else:
                found[node.index] = outer

    walk(tree, ())
    return found


#: in `repeats_along`: a helper called again loads the same elements at the same iteration
ANOTHER_CALL = "(another call)"


class _Repeats:
    """The transfers of one (source line, input) load site, for what repeats: a transfer
    repeats an earlier one when it reads the same elements of the input, i.e. the same
    access pattern at the same offset. A kept loop whose variable the offset does not
    mention repeats its transfers in each of its iterations; copies of an unrolled loop's
    instruction with the same offset and pattern repeat each other, along the unrolled
    loops whose values differ between them."""

    __slots__ = ("distinct", "first", "along", "unknown")

    def __init__(self) -> None:
        self.distinct: dict[tuple, int] = {}  # transfer key -> bytes of its distinct transfers
        self.first: dict[tuple, StaticInstruction] = {}  # key -> the first copy with it
        self.along: dict[str, None] = {}  # loop names, in the order met
        self.unknown = False  # a transfer whose elements depend on run-time values

    def add(self, inst: StaticInstruction, ap, loops: tuple) -> None:
        if ap.dynamic is not None or any(trips is None for _, _, trips in loops):
            self.unknown = True
            return
        varying = {var for var, _ in ap.terms}
        invariant = 1
        for var, name, trips in loops:
            if var not in varying and trips > 1:
                invariant *= trips
                self.along[name] = None
        key = (ap.const, ap.terms, ap.steps, ap.nums, ap.dtype)
        distinct = inst.count // invariant * ap.shape.elements * ap.itemsize
        self.distinct[key] = max(self.distinct.get(key, 0), distinct)
        first = self.first.setdefault(key, inst)
        if first is not inst:
            env, first_env = inst.unrolled_env, first.unrolled_env
            differ = [name for name, value in env.items() if first_env.get(name) != value]
            # the same iteration: the copies of a helper's load at two of its call sites
            for name in differ or (ANOTHER_CALL,):
                self.along[name] = None

    def repeated_bytes(self, loaded: int) -> int | None:
        """Of the `loaded` bytes, those that repeat an earlier transfer (None: unknown)."""
        if self.unknown:
            return None
        return loaded - sum(self.distinct.values())


def hbm_traffic(
    program,
    instructions: list[StaticInstruction],
    spill: int,
    sites: int = 10,
    loops: dict[int, tuple] | None = None,
) -> dict[str, Any]:
    """Bytes the DMAs moved per HBM tensor, and the input loads by source line: the
    performance-bounds method's redundant-transfer investigation (steps 1 and 2a). A tensor's
    `repeat` is its bytes moved over its size; an input's bytes beyond one load are reloads;
    `spill` is what the PSUM spill's DMAs moved (the profile's `spill_save_bytes` plus
    `spill_reload_bytes`). And per DMA source line its geometry, as the DMA
    efficiency investigation tabulates it: transfers, bytes, SBUF partitions and bytes per
    descriptor (below 4 KiB a descriptor's fixed cost weighs: docs/cost-model.md).

    Per input load site also the bytes of its transfers that repeat an earlier transfer of
    the same site (`_Repeats`) and the loops along which they repeat: what hoisting the load
    out of those loops would save, when the input is not written in between (for an input
    the kernel writes, and a transfer at an index known only at run time, it is `None`).
    `loops` gives each instruction's kept loops (`enclosing_loops`); without it the
    instructions are taken as loop-free."""
    kinds: dict[str, tuple[str, int]] = {}
    for t in program.outputs:
        kinds[t.name] = ("OUT", t.nbytes)
    for t in program.inputs:
        kinds[t.name] = ("INOUT" if t.name in kinds else "IN", t.nbytes)
    moved: dict[str, list[int]] = {}  # name -> [read, written]
    lines: dict[tuple, list] = {}  # (loc, tensor, direction) -> [transfers, bytes, P, desc]
    loads: dict[tuple[str, str], list[int]] = {}  # (loc, input) -> [transfers, bytes]
    sizes: dict[str, int] = {}
    for inst in instructions:
        if not inst.count or not isinstance(inst.cost, DmaPlan):
            continue
        plan = inst.cost
        hbm_in = [ap.tensor.name for ap in inst.inputs if ap.buffer == "hbm"]
        hbm_out = [ap.tensor.name for ap in inst.outputs if ap.buffer == "hbm"]
        direction = (
            "copy"
            if hbm_in and hbm_out
            else "load"
            if hbm_in
            else "store"
            if hbm_out
            else "on-chip"
        )
        key = (inst.where, ", ".join(hbm_in + hbm_out) or _tensors(inst), direction)
        line = lines.setdefault(key, [0, 0, plan.partitions, 0.0])
        line[0] += inst.count
        line[1] += plan.bytes * inst.count
        if plan.partitions:
            line[3] = plan.partition_bytes / max(1, plan.partition_elements)
        else:  # HBM to HBM: the elements of the whole transfer
            line[3] = plan.bytes / max(1, plan.partition_elements)
        for side, aps in ((0, inst.inputs), (1, inst.outputs)):
            for ap in aps:
                if ap.buffer != "hbm":
                    continue
                nbytes = ap.shape.elements * ap.itemsize * inst.count
                name = ap.tensor.name
                sizes.setdefault(name, ap.tensor.nbytes)
                moved.setdefault(name, [0, 0])[side] += nbytes
                if side == 0 and kinds.get(name, ("",))[0] in ("IN", "INOUT"):
                    site = loads.setdefault((inst.where, name), [0, 0, _Repeats()])
                    site[0] += inst.count
                    site[1] += nbytes
                    site[2].add(inst, ap, loops.get(inst.index, ()) if loops else ())
    tensors = []
    for name, (read, written) in moved.items():
        kind, size = kinds.get(name, ("HBM", sizes[name]))
        total = read + written
        tensors.append(
            {
                "name": name,
                "type": kind,
                "size_bytes": size,
                "read_bytes": read,
                "written_bytes": written,
                "transferred_bytes": total,
                "repeat": total / size if size else 0.0,
            }
        )
    tensors.sort(key=lambda t: -t["transferred_bytes"])
    reload_excess = sum(
        max(0, t["read_bytes"] - t["size_bytes"]) for t in tensors if t["type"] in ("IN", "INOUT")
    )
    by_site = sorted(loads.items(), key=lambda item: -item[1][1])
    moved_total = sum(b for _, b, _, _ in lines.values())
    by_line = sorted(lines.items(), key=lambda item: -item[1][1])
    return {
        "transfers_by_source": [
            {
                "loc": loc,
                "tensor": tensor,
                "direction": direction,
                "transfers": n,
                "bytes": b,
                "share": b / moved_total if moved_total else 0.0,
                "partitions": partitions,
                "descriptor_bytes": desc,
            }
            for (loc, tensor, direction), (n, b, partitions, desc) in by_line[:sites]
        ],
        "tensors": tensors,
        "reload_excess_bytes": reload_excess,
        "spill_bytes": spill,
        "input_loads_by_source": [
            _load_site(loc, name, n, b, repeats, moved[name][1])
            for (loc, name), (n, b, repeats) in by_site[:sites]
        ],
    }


def _load_site(
    loc: str, name: str, transfers: int, nbytes: int, repeats: _Repeats, written: int
) -> dict[str, Any]:
    """One row of `input_loads_by_source`."""
    repeated = None if written else repeats.repeated_bytes(nbytes)
    return {
        "loc": loc,
        "tensor": name,
        "transfers": transfers,
        "bytes": nbytes,
        "repeated_bytes": repeated,
        "repeats_along": list(repeats.along) if repeated else [],
    }


def explorer_sections(program, executor, profile: dict[str, Any]) -> dict[str, Any]:
    """The profile's Explorer sections of a finished run: `summary`, `bounds`,
    `hbm_traffic`, `critical_path` and `tensor_throttle`."""
    table = executor.table
    io_bytes = sum(t.nbytes for t in (*program.inputs, *program.outputs))
    traffic = hbm_traffic(
        program,
        executor.instructions,
        profile["spill_save_bytes"] + profile["spill_reload_bytes"],
        loops=enclosing_loops(executor.tree),
    )
    summary = explorer_summary(
        executor.instructions,
        profile["engines"],
        profile["total_ns"],
        table,
        executor.dma_data,
        io_bytes,
        traffic,
    )
    throttle = executor.throttle
    return {
        "summary": summary,
        "bounds": performance_bounds(summary, table),
        "hbm_traffic": traffic,
        "critical_path": critical_path(
            executor.instructions, executor.records, executor.iterations
        ),
        "tensor_throttle": None
        if throttle is None
        else {"engagements": throttle.engagements, "throttled_ns": throttle.throttled_ns},
    }
