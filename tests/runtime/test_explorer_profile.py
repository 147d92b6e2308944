"""The profile in Neuron Explorer's words: Summary metrics and performance bounds against their
documented formulas, the critical path against the run's dependency graph (networkx)."""

from __future__ import annotations

import networkx as nx
import nkirt
import pytest
from neff_builder import Kernel
from nkirt.analysis import critical_chain, performance_bounds
from nkirt.cost.tables import TARGETS

from nkic import driver
from nkic.frontend import TensorSpec

TRN2_PEAK = 128 * 128 * 2 * 2.4e9  # TensorE FLOP/s: rows · columns · 2 · clock
TRN2_DMA_PEAK = 16 * 27.2e9  # Explorer's dma_ddr_bandwidth for trn2: 435.2 GB/s


def matmul_kernel(target: str, dtype: str, count: int = 1, perf_mode: str | None = None):
    k = Kernel(target)
    x = k.input("x", dtype, [128, 512])
    k.output("unused", "float32", [1, 1])
    fold = 2 if perf_mode == "double_row" else 1
    stationary = k.sbuf("w", dtype, [128, 128 * fold])
    moving = k.sbuf("x_sb", dtype, [128, 512], byte=1024)
    load = k.dma(k.ap(moving), k.ap(x))
    zero = k.inst("memset", "vector", {"dst": k.ap(stationary)}, {"value": 0})
    dst = k.psum("acc", "float32", [128, 512 // fold])
    attrs = {"accumulate": False, **({"perf_mode": perf_mode} if perf_mode else {})}
    operands = {"dst": k.ap(dst), "stationary": k.ap(stationary), "moving": k.ap(moving)}
    for i in range(count):
        waits = [(load, 0), (zero, 0)] if i == 0 else []
        k.inst("nc_matmul", "tensor", operands, attrs, waits=waits)
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


def test_hardware_flops_and_mfu_follow_explorers_formulas():
    profile = matmul_kernel("trn2", "bfloat16", count=3).profile
    summary = profile["summary"]
    flops = 3 * 2 * 128 * 128 * 512
    assert summary["hardware_flops"] == flops
    assert summary["transpose_flops"] == 0
    assert summary["model_flops"] == flops
    total = profile["total_ns"] * 1e-9
    assert summary["total_time"] == pytest.approx(total)
    assert summary["mfu_estimated_percent"] == pytest.approx(100 * flops / (TRN2_PEAK * total))
    assert summary["hfu_estimated_percent"] == pytest.approx(summary["mfu_estimated_percent"])
    assert summary["matmul_instruction_count"] == 3
    assert summary["tensor_engine_instruction_count"] == 3
    assert summary["neuroncore_cycle_count"] == round(total * 1.2e9)  # Trainium2 base clock


def test_adjusted_flops_weigh_fp32_four_times_and_fp8_half_on_trn2_only():
    flops = 2 * 128 * 128 * 512
    fp32 = matmul_kernel("trn2", "float32").profile["summary"]
    assert fp32["adjusted_hardware_flops"] == 4 * fp32["hardware_flops"] == 4 * flops
    fp8 = matmul_kernel("trn2", "float8_e4m3").profile["summary"]
    assert fp8["adjusted_hardware_flops"] == 0.5 * fp8["hardware_flops"]
    trn1 = matmul_kernel("trn1", "float8_e4m3").profile["summary"]
    assert trn1["adjusted_hardware_flops"] == trn1["hardware_flops"]


def test_dma_metrics_count_transfers_bytes_and_hbm_sides():
    profile = matmul_kernel("trn2", "bfloat16").profile
    summary = profile["summary"]
    assert summary["dma_transfer_count"] == 1
    assert summary["dma_transfer_total_bytes"] == 128 * 512 * 2
    assert summary["dma_transfer_average_bytes"] == 128 * 512 * 2
    assert summary["hbm_read_bytes"] == 128 * 512 * 2 and summary["hbm_write_bytes"] == 0
    total = summary["total_time"]
    stack = TARGETS["trn2"].hbm_stack_gbps * 1e9
    assert summary["mbu_estimated_percent"] == pytest.approx(100 * 128 * 512 * 2 / total / stack)
    # the data phase only: the 1.3 µs fixed cost is not DMA activity
    data_ns = 8 * (1024 + 53.9 * 27.2) / 27.2  # bytes + the measured descriptor time
    assert summary["dma_active_time"] == pytest.approx(data_ns * 1e-9)


def summary_of(**times) -> dict:
    base = {
        "total_time": 10.0,
        "dma_active_time": 0.0,
        "tensor_engine_active_time": 0.0,
        "vector_engine_active_time": 0.0,
        "scalar_engine_active_time": 0.0,
        "gpsimd_engine_active_time": 0.0,
        "dma_transfer_total_bytes": 0,
        "inputs_outputs_weights_size_bytes": 0,
        "adjusted_hardware_flops": 0.0,
        "adjusted_transpose_flops": 0.0,
    }
    return {**base, **times}


def test_bounds_follow_the_performance_bounds_method():
    summary = summary_of(
        dma_active_time=8.0,
        tensor_engine_active_time=5.0,
        vector_engine_active_time=1.0,
        dma_transfer_total_bytes=int(2 * TRN2_DMA_PEAK),
        inputs_outputs_weights_size_bytes=int(TRN2_DMA_PEAK),
        adjusted_hardware_flops=3 * TRN2_PEAK,
        adjusted_transpose_flops=TRN2_PEAK,
    )
    bounds = performance_bounds(summary, TARGETS["trn2"])
    assert bounds["memory_bound"] == 8.0
    assert bounds["memory_bound_ideal"] == pytest.approx(2.0)
    assert bounds["memory_bound_ideal_no_reloads"] == pytest.approx(1.0)
    assert bounds["compute_bound"] == 5.0
    assert bounds["compute_bound_ideal_flops"] == pytest.approx(3.0)
    assert bounds["compute_bound_ideal_useful_flops"] == pytest.approx(2.0)
    assert bounds["perfect_pipeline"] == 8.0
    assert bounds["bottleneck_engine"] == "dma"
    # bn_speedup = total / max(bound, slowest engine the bound does not improve)
    assert bounds["bn_speedup"]["memory_bound_ideal"] == pytest.approx(10 / 5)
    assert bounds["bn_speedup"]["compute_bound_ideal_flops"] == pytest.approx(10 / 8)


def test_gaps_reproduce_the_published_v0_gap_tables():
    """The method's worked example (its blocking-tiled matmul V0 on trn2, 4096³ bf16): from
    the Summary figures it publishes, the gaps it publishes (µs): DMA idle 696, DMA
    inefficiency 5,130, excess traffic 2,545 (91.7 % of the traffic), TE idle 3,796, TE
    underutilisation 3,058, transpose 0."""
    summary = summary_of(
        total_time=8602e-6,
        dma_active_time=7906e-6,
        tensor_engine_active_time=4806e-6,
        vector_engine_active_time=176e-6,
        dma_transfer_total_bytes=1_207_697_408,
        inputs_outputs_weights_size_bytes=3 * 4096 * 4096 * 2,
        adjusted_hardware_flops=2.0 * 4096**3,
    )
    gaps = performance_bounds(summary, TARGETS["trn2"])["gaps"]
    published = {
        "dma_idle": 696,
        "dma_inefficiency": 5130,
        "excess_traffic": 2545,
        "te_idle": 3796,
        "te_underutilization": 3058,
        "transpose": 0,
        "pipeline_serialization": 696,
    }
    for key, us in published.items():
        assert gaps[key] * 1e6 == pytest.approx(us, abs=1.5), key  # published to the µs
    assert gaps["excess_traffic_share_of_bytes"] == pytest.approx(0.917, abs=5e-4)
    assert gaps["transpose_share_of_flops"] == 0.0


def test_no_engine_over_half_busy_is_latency_bound_not_a_bottleneck():
    bounds = performance_bounds(
        summary_of(dma_active_time=3.5, tensor_engine_active_time=4.9), TARGETS["trn2"]
    )
    assert bounds["bottleneck_engine"] is None and bounds["latency_bound"]
    assert bounds["busiest_engine"] == "tensor"
    busy = performance_bounds(summary_of(tensor_engine_active_time=5.1), TARGETS["trn2"])
    assert busy["bottleneck_engine"] == "tensor" and not busy["latency_bound"]


def test_critical_path_is_a_path_of_the_dependency_graph_ending_last():
    result = matmul_kernel("trn2", "bfloat16", count=4)
    graph = result.dependency_graph()
    assert nx.is_directed_acyclic_graph(graph)
    chain, how = critical_chain(result.instructions, result.records)
    assert nx.is_path(graph, chain)
    for (u, v), kind in zip(zip(chain, chain[1:]), how):
        assert graph.edges[u, v]["kind"] == kind
    last = max(graph.nodes, key=lambda n: graph.nodes[n]["completion"])
    assert chain[-1] == last
    # the load, then the first matmul waiting on it, then the others in queue order
    path = result.profile["critical_path"]
    assert [s["op"] for s in path["segments"]] == ["dma_copy"] + ["nc_matmul"] * 4
    assert path["segments"][0]["tensors"] == "x → x_sb"
    assert [s["released_by"] for s in path["segments"]] == ["start", "semaphore"] + ["queue"] * 3
    assert sum(s["time_ns"] for s in path["segments"]) == pytest.approx(result.profile["total_ns"])


def test_an_engines_active_time_runs_until_its_results_are_written():
    # two independent [128, 512] fp32 PSUM -> bf16 SBUF copies on VectorE (trn2, 0.96 GHz):
    # 512 cycles each back to back, the second's result 100 cycles later (static overhead)
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    acc = k.psum("acc", "float32", [128, 512])
    k.inst("memset", "vector", {"dst": k.ap(acc)}, {"value": 0})
    for n in range(2):
        out = k.sbuf(f"o{n}", "bfloat16", [128, 512], byte=1024 * n)
        k.inst("tensor_copy", "vector", {"dst": k.ap(out), "src": k.ap(acc)}, waits=[])
    summary = nkirt.execute(nkirt.load(k.neff()), timing_only=True).profile["summary"]
    memset = max(64, 512) + 100  # its own result lands before the copies read it
    expected = (memset + 512 + 512 + 100) / 0.96e9
    assert summary["vector_engine_active_time"] == pytest.approx(expected, rel=1e-6)


RELOADS = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(w, x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in range(3):
        w_t = nl.ndarray((128, 128), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w_t, src=w)
        x_t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_t, src=x[i * 128 : (i + 1) * 128, :])
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=w_t, moving=x_t)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=ps, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_hbm_traffic_counts_each_tensors_bytes_and_the_reloads_by_source_line(tmp_path):
    """`w` ([128, 128] bf16, 32 KiB) is loaded in each of 3 iterations, `x` ([384, 512] bf16)
    once in three row blocks, the fp32 output stored once: repeats 3, 1 and 1, and the reloads
    are w's two extra loads, all from the line of its `dma_copy`."""
    path = tmp_path / "reloads.py"
    path.write_text(RELOADS)
    specs = {"w": TensorSpec((128, 128), "bfloat16"), "x": TensorSpec((384, 512), "bfloat16")}
    res = driver.compile_file(str(path), "k", specs, "trn2")
    traffic = nkirt.execute(nkirt.load(res.neff), timing_only=True).profile["hbm_traffic"]
    w_bytes, x_bytes, out_bytes = 128 * 128 * 2, 384 * 512 * 2, 128 * 512 * 4
    by_name = {t["name"]: t for t in traffic["tensors"]}
    assert by_name["w"] == {
        "name": "w",
        "type": "IN",
        "size_bytes": w_bytes,
        "read_bytes": 3 * w_bytes,
        "written_bytes": 0,
        "transferred_bytes": 3 * w_bytes,
        "repeat": 3.0,
    }
    assert (by_name["x"]["transferred_bytes"], by_name["x"]["repeat"]) == (x_bytes, 1.0)
    assert by_name["out"]["type"] == "OUT" and by_name["out"]["written_bytes"] == out_bytes
    assert [t["name"] for t in traffic["tensors"]] == ["x", "out", "w"]  # most bytes first
    assert traffic["reload_excess_bytes"] == 2 * w_bytes and traffic["spill_bytes"] == 0
    line = RELOADS.splitlines().index("        nisa.dma_copy(dst=w_t, src=w)") + 1
    assert traffic["input_loads_by_source"][1] == {
        "loc": f"reloads.py:{line}",
        "tensor": "w",
        "transfers": 3,
        "bytes": 3 * w_bytes,
        "repeated_bytes": 2 * w_bytes,  # the same 32 KiB again in iterations 1 and 2
        "repeats_along": ["i"],
    }
    assert traffic["input_loads_by_source"][0]["repeated_bytes"] == 0  # x: three row blocks


def test_transfers_by_source_line_give_each_dmas_geometry(tmp_path):
    """Per DMA line, as the DMA efficiency investigation tabulates it: x's row blocks are 128
    partitions of 512 bf16 (1 KiB descriptors), w's 128 of 128 bf16 (256 B), the fp32 output
    128 of 512 fp32 (2 KiB); shares of the 720 KiB moved."""
    path = tmp_path / "reloads.py"
    path.write_text(RELOADS)
    specs = {"w": TensorSpec((128, 128), "bfloat16"), "x": TensorSpec((384, 512), "bfloat16")}
    res = driver.compile_file(str(path), "k", specs, "trn2")
    lines = nkirt.execute(nkirt.load(res.neff), timing_only=True).profile["hbm_traffic"]
    rows = [
        (
            r["tensor"],
            r["direction"],
            r["transfers"],
            r["bytes"],
            r["partitions"],
            r["descriptor_bytes"],
        )
        for r in lines["transfers_by_source"]
    ]
    assert rows == [
        ("x", "load", 3, 384 * 512 * 2, 128, 1024),
        ("out", "store", 1, 128 * 512 * 4, 128, 2048),
        ("w", "load", 3, 3 * 128 * 128 * 2, 128, 256),
    ]
    total = 384 * 512 * 2 + 128 * 512 * 4 + 3 * 128 * 128 * 2
    assert lines["transfers_by_source"][0]["share"] == pytest.approx(384 * 512 * 2 / total)
