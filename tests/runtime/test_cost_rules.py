"""Each cost rule of docs/cost-model.md, checked on a single instruction against its formula."""

from __future__ import annotations

import dataclasses

import nkirt
import pytest
from neff_builder import Kernel
from nkirt.cost import OPCODES
from nkirt.errors import RuntimeFault
from nkirt.executor import CROSS_CORE
from nkirt.neff import engines_for

TRN1_VECTOR_GHZ, TRN1_SCALAR_GHZ, TRN1_GPSIMD_GHZ, TRN1_TENSOR_GHZ = 1.12, 1.4, 1.4, 2.8
TRN2_VECTOR_GHZ, TRN2_TENSOR_GHZ = 0.96, 2.4
TRN1_SUSTAINED_GBPS = 104.1  # Hardware §12.1, measured (runtime/nkirt/cost/tables.py)
MIN_II = 64

#: trn2 DMA engine rate: 27.2 GB/s per engine (DMA overview; Explorer's 435 GB/s = 16 × 27.2)
TRN2_DMA_ENGINE_GBPS = 27.2
#: trn2 engine time per DMA descriptor, measured (cost/tables.py), in bytes at that rate
TRN2_DESCRIPTOR_BYTES = 53.9 * TRN2_DMA_ENGINE_GBPS


@pytest.fixture(autouse=True)
def unthrottled(monkeypatch):
    """The per-instruction formulas at TensorE's full rate: dI/dt throttling, which scales a
    matmul by where it falls in the ramp, has its own tests (test_throttle.py)."""
    from nkirt.cost.tables import TARGETS

    for name, table in list(TARGETS.items()):
        monkeypatch.setitem(TARGETS, name, dataclasses.replace(table, tensor_throttle=False))


def profile_of(k: Kernel) -> dict:
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True).profile


def busy(k: Kernel, engine: str) -> float:
    return profile_of(k)["engines"][engine]["busy_ns"]


def two_input(target, dtype, n, op="add", buffers=("sbuf", "sbuf"), engine="vector"):
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    tiles = []
    for i, buffer in enumerate(buffers):
        place = k.sbuf if buffer == "sbuf" else k.psum
        tiles.append(place(f"in{i}", dtype, [128, n], byte=i * 4 * n if buffer == "sbuf" else 0))
    dst = k.sbuf("dst", dtype, [128, n], byte=8 * n)
    operands = {"dst": k.ap(dst), "data1": k.ap(tiles[0]), "data2": k.ap(tiles[1])}
    k.inst("tensor_tensor", engine, operands, {"op": op})
    return k


def test_tensor_tensor_fp32_costs_two_passes_on_trn1():
    expected = 2 * 512 / TRN1_VECTOR_GHZ
    assert busy(two_input("trn1", "float32", 512), "vector") == pytest.approx(expected)


def test_tensor_tensor_latency_adds_the_vector_static_overhead():
    total = profile_of(two_input("trn1", "float32", 512))["total_ns"]
    assert total == pytest.approx((2 * 512 + 100) / TRN1_VECTOR_GHZ)


def test_tensor_tensor_one_psum_input_costs_one_pass():
    k = two_input("trn1", "float32", 512, buffers=("psum", "sbuf"))
    assert busy(k, "vector") == pytest.approx(512 / TRN1_VECTOR_GHZ)


def test_tensor_tensor_all_bf16_add_costs_one_pass_but_maximum_two():
    assert busy(two_input("trn1", "bfloat16", 512), "vector") == pytest.approx(512 / 1.12)
    slow = two_input("trn1", "bfloat16", 512, op="maximum")
    assert busy(slow, "vector") == pytest.approx(1024 / 1.12)


def test_tensor_tensor_trn2_perf_mode_halves_bf16_two_input_cost():
    k = two_input("trn2", "bfloat16", 512, op="maximum")
    assert busy(k, "vector") == pytest.approx(512 / TRN2_VECTOR_GHZ)


def test_small_tiles_cost_the_minimum_initiation_interval():
    assert busy(two_input("trn1", "float32", 16), "vector") == pytest.approx(MIN_II / 1.12)


def test_gpsimd_tensor_tensor_has_no_vector_exceptions():
    k = two_input("trn1", "bfloat16", 512, engine="gpsimd")
    profile = profile_of(k)
    assert profile["engines"]["gpsimd"]["busy_ns"] == pytest.approx(1024 / TRN1_GPSIMD_GHZ)
    assert profile["total_ns"] == pytest.approx((1024 + 150) / TRN1_GPSIMD_GHZ)


def copy(target, dtype, n, src_buffer="sbuf", step=1, engine="vector", op="tensor_copy"):
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    if src_buffer == "sbuf":
        src = k.sbuf("src", dtype, [128, n * step])
    else:
        src = k.psum("src", dtype, [128, n * step])
    dst = k.sbuf("dst", dtype, [128, n], byte=16 * n * step)
    operands = {"dst": k.ap(dst), "src": k.ap(src, [[n * step, 128], [step, n]])}
    attrs = {}
    if op == "tensor_scalar":
        operands["data"] = operands.pop("src")
        operands["operand0"] = {"imm": 2.0}
        attrs = {"op0": "multiply"}
    k.inst(op, engine, operands, attrs)
    return k


@pytest.mark.parametrize("op", ["tensor_copy", "tensor_scalar"])
def test_copy_like_costs_one_pass_on_trn1(op):
    assert busy(copy("trn1", "bfloat16", 512, op=op), "vector") == pytest.approx(512 / 1.12)


@pytest.mark.parametrize("op", ["tensor_copy", "tensor_scalar"])
def test_trn2_vector_perf_mode_is_4x_for_sbuf_bf16_unit_stride(op):
    k = copy("trn2", "bfloat16", 1024, op=op)
    assert busy(k, "vector") == pytest.approx(256 / TRN2_VECTOR_GHZ)


def test_trn2_vector_perf_mode_is_2x_with_a_psum_side_or_a_stride():
    from_psum = copy("trn2", "bfloat16", 1024, src_buffer="psum")
    assert busy(from_psum, "vector") == pytest.approx(512 / TRN2_VECTOR_GHZ)
    strided = copy("trn2", "bfloat16", 1024, step=2)
    assert busy(strided, "vector") == pytest.approx(512 / TRN2_VECTOR_GHZ)


def test_trn2_perf_mode_does_not_apply_to_fp32():
    assert busy(copy("trn2", "float32", 512), "vector") == pytest.approx(512 / TRN2_VECTOR_GHZ)


def test_innermost_stride_above_16_bytes_halves_access_bandwidth():
    wide = copy("trn1", "float32", 256, step=8)  # 32-byte stride
    assert busy(wide, "vector") == pytest.approx(2 * 256 / 1.12)
    narrow = copy("trn1", "float32", 256, step=4)  # 16-byte stride
    assert busy(narrow, "vector") == pytest.approx(256 / 1.12)


def test_scalar_engine_copy_uses_its_clock():
    assert busy(copy("trn1", "float32", 512, engine="scalar"), "scalar") == pytest.approx(512 / 1.4)


def memset(dtype, value, n=512):
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    dst = k.sbuf("dst", dtype, [128, n])
    k.inst("memset", "vector", {"dst": k.ap(dst), "value": {"imm": value}})
    return k


def test_memset_zero_bf16_is_twice_as_fast_as_other_fills():
    assert busy(memset("bfloat16", 0.0), "vector") == pytest.approx(256 / 1.12)
    assert busy(memset("bfloat16", 1.0), "vector") == pytest.approx(512 / 1.12)
    assert busy(memset("float32", 0.0), "vector") == pytest.approx(512 / 1.12)


def activation(n, reduce=False):
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    data = k.sbuf("data", "float32", [128, n])
    dst = k.sbuf("dst", "float32", [128, n], byte=4 * n)
    operands = {"dst": k.ap(dst), "data": k.ap(data)}
    if reduce:
        operands["reduce_res"] = k.ap(k.sbuf("acc", "float32", [128, 1], byte=8 * n))
    k.inst("activation", "scalar", operands, {"op": "exp"})
    return k


def test_activation_costs_n_scalar_cycles_and_its_pipeline_latency():
    profile = profile_of(activation(512))
    assert profile["engines"]["scalar"]["busy_ns"] == pytest.approx(512 / TRN1_SCALAR_GHZ)
    assert profile["total_ns"] == pytest.approx(
        (512 + 200) / TRN1_SCALAR_GHZ
    )  # 264 − MIN_II cycles of latency


def test_activation_with_reduce_res_adds_the_accumulator_read_out():
    assert busy(activation(512, reduce=True), "scalar") == pytest.approx((512 + 64) / 1.4)


def reduce_kernel(dtype, op):
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    data = k.sbuf("data", dtype, [128, 1024])
    dst = k.sbuf("dst", dtype, [128, 1], byte=8192)
    k.inst("tensor_reduce", "vector", {"dst": k.ap(dst), "data": k.ap(data)}, {"op": op, "axis": 1})
    return k


def test_tensor_reduce_bf16_add_is_half_a_pass():
    assert busy(reduce_kernel("bfloat16", "add"), "vector") == pytest.approx(512 / 1.12)
    assert busy(reduce_kernel("float32", "add"), "vector") == pytest.approx(1024 / 1.12)
    assert busy(reduce_kernel("bfloat16", "multiply"), "vector") == pytest.approx(1024 / 1.12)


def matmul(target, dtype, n, m=128, perf_mode=None, fold=1):
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    stationary = k.sbuf("w", dtype, [128, m * fold])
    moving = k.sbuf("x", dtype, [128, n * fold], byte=8 * m * fold)
    dst = k.psum("acc", "float32", [m, n])
    attrs = {"accumulate": False}
    if perf_mode:
        attrs["perf_mode"] = perf_mode
    operands = {"dst": k.ap(dst), "stationary": k.ap(stationary), "moving": k.ap(moving)}
    k.inst("nc_matmul", "tensor", operands, attrs)
    return k


def test_matmul_is_load_stationary_then_max_n_64_cycles():
    # LS: max(M, 64) / 4 = 32 cycles; MM: max(N, 64)
    assert busy(matmul("trn1", "bfloat16", 512), "tensor") == pytest.approx((32 + 512) / 2.8)
    assert busy(matmul("trn1", "bfloat16", 16), "tensor") == pytest.approx((32 + 64) / 2.8)


def test_fp32_matmul_costs_four_times_bf16():
    assert busy(matmul("trn1", "float32", 512), "tensor") == pytest.approx(4 * (32 + 512) / 2.8)


def test_double_row_fp8_doubles_matmul_throughput_on_trn2():
    fp8 = matmul("trn2", "float8_e4m3", 512, perf_mode="double_row", fold=2)
    assert busy(fp8, "tensor") == pytest.approx((32 + 512) / TRN2_TENSOR_GHZ)
    plain = matmul("trn2", "float8_e4m3", 1024)
    assert busy(plain, "tensor") == pytest.approx((32 + 1024) / TRN2_TENSOR_GHZ)


def test_back_to_back_matmuls_hide_load_stationary_behind_the_previous_multiply():
    k = matmul("trn1", "bfloat16", 512)
    k.inst("nc_matmul", "tensor", dict(k.body[0]["operands"]), {"accumulate": True})
    assert busy(k, "tensor") == pytest.approx((32 + 512 + 512) / 2.8)


def test_a_matmul_that_waits_for_its_data_pays_its_load_stationary_again():
    # the second matmul's moving tile arrives by DMA long after the first MultiplyMoving ends:
    # no previous MultiplyMoving hides its LoadStationary, so it is exposed (and counted active)
    k = matmul("trn2", "bfloat16", 512)
    x = k.input("x", "bfloat16", [128, 512])
    late = k.sbuf("late", "bfloat16", [128, 512], byte=8 * 128 + 1024)
    load = k.dma(k.ap(late), k.ap(x))
    operands = dict(k.body[0]["operands"], moving=k.ap(late))
    k.inst("nc_matmul", "tensor", operands, {"accumulate": True}, waits=[(load, 0)])
    profile = profile_of(k)
    one = (32 + 512) / TRN2_TENSOR_GHZ
    tensor = profile["engines"]["tensor"]
    assert tensor["busy_ns"] == pytest.approx(2 * one)
    assert profile["summary"]["tensor_engine_active_time"] * 1e9 == pytest.approx(2 * one)
    assert profile["total_ns"] > 1300 + one  # the second matmul started after the load


def dma(target, src_shape, dst_tile, dst_partition=0, **attrs):
    k = Kernel(target)
    x = k.input("x", "bfloat16", src_shape)
    k.output("unused", "float32", [1, 1])
    tile = k.sbuf("t", "bfloat16", dst_tile, partition=dst_partition)
    k.dma(k.ap(tile), k.ap(x), **attrs)
    return k


def test_dma_fixed_cost_plus_bytes_over_engine_bandwidth():
    # [128, 1024] bf16: 16 engines × 8 partitions × (2048 B + 53.9 ns per descriptor), 27.2 B/ns
    total = profile_of(dma("trn2", [128, 1024], [128, 1024]))["total_ns"]
    assert total == pytest.approx(1300 + 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS)


def test_trn2_dma_efficiency_grows_with_bytes_per_descriptor():
    # data phase of a [128, F] bf16 load: efficiency = bytes / (bytes + 53.9 ns · 27.2 B/ns)
    def efficiency(free: int) -> float:
        data = profile_of(dma("trn2", [128, free], [128, free]))["total_ns"] - 1300
        return 8 * 2 * free / TRN2_DMA_ENGINE_GBPS / data

    small, recommended, large = efficiency(128), efficiency(1024), efficiency(2048)
    assert small < recommended < large
    assert small == pytest.approx(256 / (256 + TRN2_DESCRIPTOR_BYTES))  # "severely" bound
    assert large == pytest.approx(4096 / (4096 + TRN2_DESCRIPTOR_BYTES))
    assert small < 0.2 and large > 0.7


def test_dma_on_four_partitions_uses_one_engine():
    total = profile_of(dma("trn2", [4, 4096], [4, 4096]))["total_ns"]
    assert total == pytest.approx(1300 + 4 * (8192 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS)


def test_dma_partitions_map_to_engines_by_eights():
    # partitions 4..11 straddle engines 0 and 1: 4 partitions each
    total = profile_of(dma("trn2", [8, 4096], [8, 4096], dst_partition=4))["total_ns"]
    assert total == pytest.approx(1300 + 4 * (8192 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS)


def hbm_to_hbm(target):
    k = Kernel(target)
    x = k.input("x", "float32", [512, 512])
    y = k.output("y", "float32", [512, 512])
    k.dma(k.ap(y), k.ap(x))
    return k


def test_hbm_to_hbm_dma_splits_bytes_over_sixteen_engines():
    profile = profile_of(hbm_to_hbm("trn2"))
    engines = (2**20 / 16 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    # it reads and writes HBM: 2 MiB through the core's 725 GB/s HBM stack outlasts the
    # engines' 1 MiB each way (2.9 TB/s over 4 stacks)
    stack = 2 * 2**20 / (2900 / 4)
    assert stack > engines
    assert profile["total_ns"] == pytest.approx(1300 + stack)


def test_hwdge_dma_has_the_shorter_fixed_cost_where_present():
    on_trn2 = profile_of(dma("trn2", [128, 1024], [128, 1024], dge_mode="hwdge"))["total_ns"]
    assert on_trn2 == pytest.approx(600 + 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS)
    # trn1 has no hardware DGE: the 1.3 µs fixed cost, then 256 KiB at the sustained HBM rate
    on_trn1 = profile_of(dma("trn1", [128, 1024], [128, 1024], dge_mode="hwdge"))["total_ns"]
    assert on_trn1 == pytest.approx(1300 + 2**18 / TRN1_SUSTAINED_GBPS)


def test_trn1_dma_data_moves_no_faster_than_the_sustained_hbm_rate():
    # 16 engines would move this [128, 1024] bf16 load in 8 × (2048 + 256) / 17 = 1,084 ns;
    # the core sustains 104.1 GB/s to and from HBM (Hardware §12.1, measured): 2,518 ns
    profile = profile_of(dma("trn1", [128, 1024], [128, 1024]))
    assert profile["total_ns"] == pytest.approx(1300 + 2**18 / TRN1_SUSTAINED_GBPS)
    assert profile["engines"]["dma"]["hbm_rate_utilization"] == pytest.approx(
        (2**18 / TRN1_SUSTAINED_GBPS) / profile["total_ns"]
    )


def test_trn1_hbm_to_hbm_dma_counts_both_sides_against_the_sustained_rate():
    total = profile_of(hbm_to_hbm("trn1"))["total_ns"]
    assert total == pytest.approx(1300 + 2 * 2**20 / TRN1_SUSTAINED_GBPS)


def parallel_loads(target, count=8):
    """`count` [128, 512] bf16 loads into distinct tiles: one transfer on each of `count` queues."""
    k = Kernel(target)
    x = k.input("x", "bfloat16", [128, 512 * count])
    k.output("unused", "float32", [1, 1])
    for i in range(count):
        tile = k.sbuf(f"t{i}", "bfloat16", [128, 512], byte=1024 * i)
        src = k.ap(x, [[512 * count, 128], [1, 512]], offset=512 * i)
        k.dma(k.ap(tile), src, queue=f"dma{i}")
    return k


def test_trn1_concurrent_queues_share_the_sustained_hbm_rate():
    # 8 × 128 KiB issued at once on 8 queues: one fixed cost, then 1 MiB at 104.1 GB/s
    total = profile_of(parallel_loads("trn1"))["total_ns"]
    assert total == pytest.approx(1300 + 8 * 2**17 / TRN1_SUSTAINED_GBPS)


def test_trn2_has_no_measured_sustained_rate_so_the_engines_bound_concurrent_queues():
    total = profile_of(parallel_loads("trn2"))["total_ns"]
    assert total == pytest.approx(
        1300 + 8 * 8 * (1024 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    )


def test_sbuf_to_sbuf_dma_is_not_bound_by_the_hbm_rate():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "bfloat16", [128, 1024])
    b = k.sbuf("b", "bfloat16", [128, 1024])
    fill = k.inst("memset", "vector", {"dst": k.ap(a)}, {"value": 0.0})
    k.dma(k.ap(b), k.ap(a), waits=[(fill, 0)])
    dma_busy = profile_of(k)["engines"]["dma"]["busy_ns"]
    assert dma_busy == pytest.approx(1300 + 8 * (2048 + 256) / 17)


def test_dma_with_strided_source_pays_one_element_overhead_per_run():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 2048])
    k.output("unused", "float32", [1, 1])
    tile = k.sbuf("t", "bfloat16", [128, 1024])
    k.dma(k.ap(tile), k.ap(x, [[2048, 128], [2, 1024]]))  # every other column
    expected = 1300 + 8 * (2048 + 1024 * TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    assert profile_of(k)["total_ns"] == pytest.approx(expected)


def test_iota_is_gpsimd_start_plus_n():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    dst = k.sbuf("dst", "int32", [128, 512])
    k.inst("iota", "gpsimd", {"dst": k.ap(dst)}, {"pattern": [[1, 512]], "offset": 0})
    assert profile_of(k)["total_ns"] == pytest.approx((150 + 512) / TRN1_GPSIMD_GHZ)


def test_tensor_engine_transpose_uses_the_beta1_formula():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    data = k.sbuf("data", "bfloat16", [128, 32])
    dst = k.psum("dst", "bfloat16", [32, 128])
    k.inst("nc_transpose", "tensor", {"dst": k.ap(dst), "data": k.ap(data)})
    assert busy(k, "tensor") == pytest.approx(max(128, min(64, 32)) / 2.8)


def test_dma_transpose_runs_at_ninety_percent_of_copy_throughput_from_hbm():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [1024, 128])
    k.output("unused", "float32", [1, 1])
    tile = k.sbuf("t", "bfloat16", [128, 1024])
    k.inst("dma_transpose", "dma", {"dst": k.ap(tile), "src": k.ap(x)}, {"axes": [1, 0]})
    expected = 1300 + 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / (TRN2_DMA_ENGINE_GBPS * 0.9)
    assert profile_of(k)["total_ns"] == pytest.approx(expected)


def test_trn3_scalar_engine_has_a_2x_bf16_copy_mode():
    k = copy("trn3", "bfloat16", 512, engine="scalar")
    assert busy(k, "scalar") == pytest.approx(256 / 1.2)


# Operands by parameter name, for instructions whose operands are not (dst, data).
OPERANDS = {
    "dma_copy": ("dst", "src"),
    "dma_transpose": ("dst", "src"),
    "dma_compute": ("dst", "srcs0", "srcs1"),
    "tensor_copy": ("dst", "src"),
    "tensor_copy_predicated": ("dst", "src", "predicate"),
    "memset": ("dst",),
    "iota": ("dst",),
    "rng": ("dst",),
    "rand2": ("dst",),
    "set_rng_seed": ("src_seeds",),
    "rand_set_state": ("src_seeds",),
    "rand_get_state": ("dst",),
    "tensor_tensor": ("dst", "data1", "data2"),
    "tensor_tensor_scan": ("dst", "data0", "data1"),
    "scalar_tensor_tensor": ("dst", "data", "operand1"),
    "nc_matmul": ("dst", "stationary", "moving"),
    "nc_matmul_mx": ("dst", "stationary", "moving", "stationary_scale", "moving_scale"),
    "local_gather": ("dst", "src_buffer", "index"),
    "nc_n_gather": ("dst", "data", "indices"),
    "topk": ("val_dst", "idx_dst", "src"),
    "affine_select": ("dst", "on_true_tile"),
    "range_select": ("dst", "on_true_tile"),
    "select_reduce": ("dst", "predicate", "on_true"),
    "sequence_bounds": ("dst", "segment_ids"),
    "nc_stream_shuffle": ("dst", "src"),
    "exponential": ("dst", "src"),
    "quantize_mx": ("dst", "src", "dst_scale"),
    "tensor_scalar_cumulative": ("dst", "src"),
    "nonzero_with_count": ("dst", "src"),
}


@pytest.mark.parametrize("op", sorted(OPCODES - CROSS_CORE))
@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_every_instruction_has_a_positive_cost(op, target):
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    operands = {}
    for i, name in enumerate(OPERANDS.get(op, ("dst", "data"))):
        tile = k.sbuf(name, "bfloat16", [128, 256], byte=i * 512)
        operands[name] = k.ap(tile)
    k.inst(op, engines_for(op)[0], operands, {"n": 256, "op": "add"})
    profile = profile_of(k)
    assert profile["total_ns"] > 0


@pytest.mark.parametrize("op", sorted(CROSS_CORE))
def test_a_cross_core_instruction_on_a_single_core_is_a_fault(op):
    # their costs are tested on two cores (tests/e2e/test_lnc.py)
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    operands = {n: k.ap(k.sbuf(n, "bfloat16", [128, 256], byte=i * 512)) for i, n in
                enumerate(("dst", "src"))}  # fmt: skip
    k.inst(op, "gpsimd", operands, {"op": "add", "send_to_rank": 1, "recv_from_rank": 1})
    with pytest.raises(RuntimeFault, match="meets the other core of an LNC=2 launch"):
        profile_of(k)


def test_an_engine_waiting_on_a_semaphore_is_active_but_not_busy():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 1024])
    k.output("unused", "float32", [1, 1])
    t = k.sbuf("t", "bfloat16", [128, 1024])
    o = k.sbuf("o", "bfloat16", [128, 1024], byte=2048)
    load = k.dma(k.ap(t), k.ap(x))
    k.inst("tensor_copy", "vector", {"dst": k.ap(o), "src": k.ap(t)}, waits=[(load, 0)])
    profile = profile_of(k)
    vector = profile["engines"]["vector"]
    load_ns = 1300 + 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    copy_ns = 1024 / 4 / TRN2_VECTOR_GHZ  # bf16 SBUF copy in the 4x performance mode
    assert vector["busy_ns"] == pytest.approx(copy_ns)
    assert vector["active_ns"] == pytest.approx(load_ns + copy_ns)
    assert vector["active"] == pytest.approx((load_ns + copy_ns) / profile["total_ns"])
