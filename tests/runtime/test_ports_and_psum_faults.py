"""v2 shared SBUF/PSUM ports (Hardware §8) and the PSUM accumulation fault (Hardware §4)."""

from __future__ import annotations

import nkirt
import numpy as np
import pytest
from neff_builder import Kernel


def run(k: Kernel, **kw):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True, **kw)


def two_engines(target: str, first: str, second: str, buffer: str) -> float:
    """Two independent instructions on `first` and `second`, each reading `buffer`."""
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    src = (k.psum if buffer == "psum" else k.sbuf)("src", "float32", [128, 512])
    a = k.sbuf("a", "float32", [128, 512], byte=16384)
    b = k.sbuf("b", "float32", [128, 512], byte=32768)
    for engine, dst in ((first, a), (second, b)):
        if engine == "scalar":
            k.inst("activation", "scalar", {"dst": k.ap(dst), "data": k.ap(src)}, {"op": "copy"})
        else:
            k.inst("tensor_copy", engine, {"dst": k.ap(dst), "src": k.ap(src)})
    return run(k).profile


def busy_sum(profile, *engines) -> float:
    return sum(profile["engines"][e]["busy_ns"] for e in engines)


def test_vector_and_gpsimd_take_turns_on_the_v2_sbuf_port():
    trn1 = two_engines("trn1", "vector", "gpsimd", "sbuf")
    # serialised: the second starts when the first's busy interval ends
    assert trn1["total_ns"] >= busy_sum(trn1, "vector", "gpsimd")
    trn2 = two_engines("trn2", "vector", "gpsimd", "sbuf")
    assert trn2["total_ns"] < busy_sum(trn2, "vector", "gpsimd")  # v3 lifts it


def test_vector_and_scalar_take_turns_on_the_v2_psum_port():
    trn1 = two_engines("trn1", "vector", "scalar", "psum")
    assert trn1["total_ns"] >= busy_sum(trn1, "vector", "scalar")


def test_vector_and_scalar_share_sbuf_at_full_rate_on_v2():
    profile = two_engines("trn1", "vector", "scalar", "sbuf")
    assert profile["total_ns"] < busy_sum(profile, "vector", "scalar")


def test_a_port_stall_is_visible_in_the_trace():
    k = Kernel("trn1")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    k.inst("memset", "gpsimd", {"dst": k.ap(a), "value": {"imm": 0.0}})
    k.inst("memset", "vector", {"dst": k.ap(b), "value": {"imm": 0.0}})
    events = run(k).trace()["traceEvents"]
    waits = [e for e in events if e.get("cat") == "port"]
    assert len(waits) == 1 and waits[0]["name"] == "wait shared SBUF/PSUM port"


def accumulate_onto(first_writer: str) -> Kernel:
    k = Kernel("trn2")
    w = k.input("w", "bfloat16", [128, 128])
    x = k.input("x", "bfloat16", [128, 512])
    y = k.output("y", "float32", [128, 512])
    ws = k.sbuf("ws", "bfloat16", [128, 128])
    xs = k.sbuf("xs", "bfloat16", [128, 512], byte=4096)
    acc = k.psum("acc", "float32", [128, 512])
    out = k.sbuf("out", "float32", [128, 512], byte=8192)
    k.dma(k.ap(ws), k.ap(w))
    k.dma(k.ap(xs), k.ap(x), waits=[(0, 0)])
    matmul = {"dst": k.ap(acc), "stationary": k.ap(ws), "moving": k.ap(xs)}
    if first_writer == "matmul":
        k.inst("nc_matmul", "tensor", matmul, {"accumulate": False}, waits=[(1, 0)])
    else:
        k.inst("memset", "vector", {"dst": k.ap(acc), "value": {"imm": 0.0}}, waits=[(1, 0)])
    k.inst("nc_matmul", "tensor", matmul, {"accumulate": True}, waits=[(2, 0)], line=42)
    k.inst("tensor_copy", "vector", {"dst": k.ap(out), "src": k.ap(acc)}, waits=[(3, 0)])
    k.dma(k.ap(y), k.ap(out), waits=[(4, 0)])
    return k


@pytest.mark.usefixtures("fake_isa")
def test_accumulating_onto_a_matmul_result_is_fine():
    w = np.ones((128, 128), np.float32)
    x = np.ones((128, 512), np.float32)
    res = nkirt.execute(nkirt.load(accumulate_onto("matmul").neff()), {"w": w, "x": x})
    assert np.all(res.outputs["y"] == 256)


@pytest.mark.usefixtures("fake_isa")
def test_accumulating_onto_a_value_another_engine_wrote_is_a_fault_with_its_line():
    with pytest.raises(nkirt.RuntimeFault) as info:
        nkirt.execute(nkirt.load(accumulate_onto("memset").neff()), {})
    message = str(info.value)
    assert message.startswith("PSUM accumulation onto a non-matmul value: nc_matmul at ")
    assert "test_kernel.py:42" in message


@pytest.mark.usefixtures("fake_isa")
def test_accumulating_after_another_engine_overwrote_a_matmul_result_is_a_fault():
    """PSUM remembers the regions TensorE wrote last; another engine's write forgets them."""
    k = Kernel("trn2")
    w = k.input("w", "bfloat16", [128, 128])
    x = k.input("x", "bfloat16", [128, 512])
    k.output("y", "float32", [1, 1])
    ws = k.sbuf("ws", "bfloat16", [128, 128])
    xs = k.sbuf("xs", "bfloat16", [128, 512], byte=4096)
    acc = k.psum("acc", "float32", [128, 512])
    k.dma(k.ap(ws), k.ap(w))
    k.dma(k.ap(xs), k.ap(x), waits=[(0, 0)])
    matmul = {"dst": k.ap(acc), "stationary": k.ap(ws), "moving": k.ap(xs)}
    k.inst("nc_matmul", "tensor", matmul, {"accumulate": False}, waits=[(1, 0)])
    k.inst("nc_matmul", "tensor", matmul, {"accumulate": True}, waits=[(2, 0)])
    k.inst("memset", "vector", {"dst": k.ap(acc), "value": {"imm": 0.0}}, waits=[(3, 0)])
    k.inst("nc_matmul", "tensor", matmul, {"accumulate": True}, waits=[(4, 0)], line=43)
    with pytest.raises(nkirt.RuntimeFault, match="non-matmul value: nc_matmul at .*:43"):
        nkirt.execute(nkirt.load(k.neff()), {})


def vector_and_scalar_on_psum(target: str, second_byte: int):
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    first = k.psum("first", "float32", [128, 512])
    second = k.psum("second", "float32", [128, 512], byte=second_byte)
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    k.inst("tensor_copy", "vector", {"dst": k.ap(a), "src": k.ap(first)})
    k.inst("activation", "scalar", {"dst": k.ap(b), "data": k.ap(second)}, {"op": "copy"})
    return run(k).profile


def test_v3_vector_and_scalar_share_psum_only_on_different_banks():
    same = vector_and_scalar_on_psum("trn2", 0)
    assert same["total_ns"] >= busy_sum(same, "vector", "scalar")
    other = vector_and_scalar_on_psum("trn2", 2048)  # the next 2 KiB bank
    assert other["total_ns"] < busy_sum(other, "vector", "scalar")
    trn1 = vector_and_scalar_on_psum("trn1", 2048)  # v2: one PSUM port for all banks
    assert trn1["total_ns"] >= busy_sum(trn1, "vector", "scalar")


def test_the_port_arbiter_fits_an_instruction_into_a_gap_of_the_rival():
    from nkirt.ports import PortArbiter

    arbiter = PortArbiter(lambda: 0.0)
    vector, gpsimd = ("sbuf", "vector"), ("sbuf", "gpsimd")
    assert arbiter.place(((gpsimd, vector),), 0.0, 10.0) == 0.0
    assert arbiter.place(((gpsimd, vector),), 30.0, 10.0) == 30.0
    claim = ((vector, gpsimd),)
    assert arbiter.place(claim, 5.0, 15.0) == 10.0  # fits in the gap [10, 30)
    assert arbiter.place(claim, 25.0, 15.0) == 40.0  # [25, 40) would meet [30, 40)
