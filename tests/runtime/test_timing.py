"""Queues run concurrently, waits and same-queue interlocks order them, DMA engines are shared."""

from __future__ import annotations

import nkirt
import pytest
from neff_builder import Kernel

#: trn2 DMA engine rate: 27.2 GB/s per engine (DMA overview; Explorer's 435 GB/s = 16 × 27.2)
TRN2_DMA_ENGINE_GBPS = 27.2
#: trn2 engine time per DMA descriptor, measured (cost/tables.py), in bytes at that rate
TRN2_DESCRIPTOR_BYTES = 53.9 * TRN2_DMA_ENGINE_GBPS


def run(k: Kernel):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


def slices(result) -> list[dict]:
    return [e for e in result.trace()["traceEvents"] if e["ph"] == "X" and e["cat"] != "semaphore"]


def vector_and_scalar(wait: bool) -> Kernel:
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    c = k.sbuf("c", "float32", [128, 512], byte=8192)
    first = k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 1.0}})
    src = a if wait else c
    k.inst(
        "activation",
        "scalar",
        {"dst": k.ap(b), "data": k.ap(src)},
        {"op": "exp"},
        waits=[(first, 0)] if wait else (),
    )
    return k


def test_independent_instructions_on_different_engines_overlap():
    profile = run(vector_and_scalar(wait=False)).profile
    busy = profile["engines"]["vector"]["busy_ns"] + profile["engines"]["scalar"]["busy_ns"]
    assert profile["total_ns"] < busy


def test_a_semaphore_wait_serialises_producer_and_consumer():
    memset_done = (512 + 100) / 1.12
    activation = (512 + 200) / 1.4
    assert run(vector_and_scalar(wait=True)).profile["total_ns"] == pytest.approx(
        memset_done + activation
    )


def test_wait_skip_refers_to_an_older_instance_and_nothing_before_it_exists():
    def kernel(skip):
        k = Kernel("trn2")  # trn1 would also serialise the shared SBUF port (Hardware §8)
        k.output("unused", "float32", [1, 1])
        a = k.sbuf("a", "float32", [128, 2048])
        b = k.sbuf("b", "float32", [128, 64], byte=8192)
        with k.loop("i", 0, 3):
            producer = k.inst("memset", "gpsimd", {"dst": k.ap(a), "value": {"imm": 0.0}})
            k.inst(
                "memset",
                "vector",
                {"dst": k.ap(b), "value": {"imm": 0.0}},
                waits=[(producer, skip)],
            )
        return run(k)

    vector_starts = [s["ts"] for s in slices(kernel(1)) if s["cat"] == "vector"]
    gpsimd_ends = [
        s["args"]["completion_ns"] / 1000 for s in slices(kernel(1)) if s["cat"] == "gpsimd"
    ]
    # trace slices start and end on whole nanoseconds: within half a nanosecond (0.0005 µs)
    assert vector_starts[0] == 0  # the instance one older than the first does not exist
    # trace slices start on whole ns
    assert vector_starts[1] == pytest.approx(gpsimd_ends[0], abs=1e-3)
    assert vector_starts[2] == pytest.approx(gpsimd_ends[1], abs=1e-3)
    in_step = [s["ts"] for s in slices(kernel(0)) if s["cat"] == "vector"]
    assert in_step[0] == pytest.approx(gpsimd_ends[0], abs=1e-3)


def test_same_queue_read_after_write_waits_for_the_result():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 1])
    b = k.sbuf("b", "float32", [128, 1], byte=64)
    k.inst("memset", "scalar", {"dst": k.ap(a), "value": {"imm": 1.0}})
    for _ in range(9):
        k.inst("activation", "scalar", {"dst": k.ap(b), "data": k.ap(a)}, {"op": "exp"})
        k.inst("activation", "scalar", {"dst": k.ap(a), "data": k.ap(b)}, {"op": "exp"})
    # Hardware §6 / PERF: dependent 1-element ScalarE instructions issue every 264 cycles
    assert run(k).profile["total_ns"] == pytest.approx(19 * 264 / 1.4)


def test_independent_instructions_on_one_queue_issue_back_to_back():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    for i in range(10):
        tile = k.sbuf(f"t{i}", "float32", [128, 1], byte=64 * i)
        k.inst("memset", "scalar", {"dst": k.ap(tile), "value": {"imm": 1.0}})
    assert run(k).profile["total_ns"] == pytest.approx((10 * 64 + 200) / 1.4)


def dma_ns_per_byte(columns: int) -> float:
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, columns])
    k.output("unused", "float32", [1, 1])
    tile = k.sbuf("t", "bfloat16", [128, columns])
    k.dma(k.ap(tile), k.ap(x))
    profile = run(k).profile
    return profile["total_ns"] / profile["dma_bytes"]


def test_bigger_dma_transfers_are_cheaper_per_byte():
    costs = [dma_ns_per_byte(n) for n in (64, 256, 1024, 4096)]
    assert costs == sorted(costs, reverse=True)
    assert costs[0] > 4 * costs[-1]


def matmul_time(dtype: str) -> float:
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    w = k.sbuf("w", dtype, [128, 128])
    x = k.sbuf("x", dtype, [128, 512], byte=1024)
    acc = k.psum("acc", "float32", [128, 512])
    for i in range(4):
        k.inst(
            "nc_matmul",
            "tensor",
            {"dst": k.ap(acc), "stationary": k.ap(w), "moving": k.ap(x)},
            {"accumulate": i > 0},
        )
    return run(k).profile["total_ns"]


def test_bf16_matmul_is_faster_than_fp32():
    assert matmul_time("bfloat16") * 3 < matmul_time("float32")


def two_loads(second_partition: int) -> float:
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [64, 4096])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "bfloat16", [64, 4096], partition=0)
    b = k.sbuf("b", "bfloat16", [64, 4096], partition=second_partition, byte=8192)
    k.dma(k.ap(a), k.ap(x), queue="dma0")
    k.dma(k.ap(b), k.ap(x), queue="dma1")
    return run(k).profile["total_ns"]


def test_concurrent_dmas_share_the_dma_engines_of_their_partitions():
    alone = 8 * (8192 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    assert two_loads(64) == pytest.approx(1300 + alone)  # disjoint engines: in parallel
    assert two_loads(0) == pytest.approx(1300 + 2 * alone)  # same 8 engines: bandwidth shared


def test_a_dma_queue_overlaps_the_next_fixed_cost_with_the_current_data():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 1024])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "bfloat16", [128, 1024])
    b = k.sbuf("b", "bfloat16", [128, 1024], byte=4096)
    k.dma(k.ap(a), k.ap(x), queue="dma3")
    k.dma(k.ap(b), k.ap(x), queue="dma3")
    data = 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    # the second transfer is triggered once the first one's fixed cost is spent
    assert run(k).profile["total_ns"] == pytest.approx(2 * 1300 + data)


def test_transfers_of_one_queue_complete_in_order():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [8, 4096])
    k.output("unused", "float32", [1, 1])
    big = k.sbuf("big", "bfloat16", [8, 4096])  # DMA engine 0
    small = k.sbuf("small", "bfloat16", [4, 64], partition=64, byte=8192)  # DMA engine 8
    k.dma(k.ap(big), k.ap(x), queue="dma3")
    k.dma(k.ap(small), k.ap(x, [[4096, 4], [1, 64]]), queue="dma3")
    big_done, small_done = [s["args"]["completion_ns"] for s in slices(run(k))]
    assert big_done == pytest.approx(
        1300 + 8 * (8192 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS
    )
    assert small_done == big_done  # its own data was moved long before


def test_a_later_issued_transfer_fills_idle_dma_engine_time():
    # the store waits for a long GpSimd instruction; the load issued after it in program order
    # is ready at once and must not queue behind the store on the DMA engines
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 1024])
    y = k.output("y", "bfloat16", [128, 1024])
    a = k.sbuf("a", "bfloat16", [128, 1024])
    b = k.sbuf("b", "bfloat16", [128, 1024], byte=4096)
    k.inst("iota", "gpsimd", {"dst": k.ap(a)}, {"pattern": [[1, 1024]]})
    k.inst("iota", "gpsimd", {"dst": k.ap(a)}, {"pattern": [[1, 1024]]})
    k.dma(k.ap(y), k.ap(a), waits=[(1, 0)], queue="dma0")
    k.dma(k.ap(b), k.ap(x), queue="dma1")
    load = [s for s in slices(run(k)) if s["tid"] == 6][0]  # dma1's track
    assert load["ts"] == 0
    assert load["dur"] == pytest.approx(  # whole ns in the trace
        (1300 + 8 * (2048 + TRN2_DESCRIPTOR_BYTES) / TRN2_DMA_ENGINE_GBPS) / 1000, abs=1e-3
    )


def test_dma_bound_program_reports_dma_as_bottleneck():
    # 16 KiB per partition: the data phase (8 × 16 KiB per engine) outlasts the fixed cost
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 8192])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "bfloat16", [128, 8192])
    load = k.dma(k.ap(a), k.ap(x))
    b = k.sbuf("b", "bfloat16", [128, 8192], byte=16384)
    k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": k.ap(a)}, waits=[(load, 0)])
    profile = run(k).profile
    assert profile["bottleneck"] == "dma"
    assert profile["bounds"]["bottleneck_engine"] == "dma"


def test_one_small_load_then_a_copy_is_latency_bound():
    # the 1.3 µs fixed cost dominates: no engine is busy half the time
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 256])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "bfloat16", [128, 256])
    load = k.dma(k.ap(a), k.ap(x))
    b = k.sbuf("b", "bfloat16", [128, 256], byte=1024)
    k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": k.ap(a)}, waits=[(load, 0)])
    result = run(k)
    profile = result.profile
    assert profile["bottleneck"] == "latency"
    assert profile["bounds"]["bottleneck_engine"] is None
    assert "latency-bound" in result.summary() and "bottleneck:" not in result.summary()
    # the chain: the load, then the copy that waited for it
    segments = profile["critical_path"]["segments"]
    assert [s["op"] for s in segments] == ["dma_copy", "tensor_copy"]
    assert segments[1]["released_by"] == "semaphore"
    assert sum(s["time_ns"] for s in segments) == pytest.approx(profile["total_ns"])
