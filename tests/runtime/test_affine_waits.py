"""Per-iteration wait skips (affine in the loop variables) and the ideal-waits analysis."""

from __future__ import annotations

import nkirt
import pytest
from neff_builder import Kernel


def producers_then_consumers(skip, first_only=False) -> Kernel:
    """Three GpSimd memsets of a[j], then three VectorE copies of a[j] (or of a[0])."""
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 3, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=8192)
    with k.loop("i", 0, 3):
        producer = k.inst(
            "memset",
            "gpsimd",
            {
                "dst": k.ap(a, [[1536, 128], [1, 512]], {"c": 0, "t": {"i": 512}}),
                "value": {"imm": 0.0},
            },
        )
    with k.loop("j", 0, 3):
        src = k.ap(a, [[1536, 128], [1, 512]], 0 if first_only else {"c": 0, "t": {"j": 512}})
        k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": src}, waits=[(producer, skip)])
    return k


def events(result):
    return [e for e in result.trace()["traceEvents"] if e["ph"] == "X" and e["cat"] != "semaphore"]


def run(k: Kernel, **kw):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True, **kw)


def test_an_affine_skip_waits_for_the_producer_instance_of_the_same_iteration():
    result = run(producers_then_consumers({"c": 2, "t": {"j": -1}}))
    done = [e["args"]["completion_ns"] for e in events(result) if e["cat"] == "gpsimd"]
    starts = [e["args"]["start_ns"] for e in events(result) if e["cat"] == "vector"]
    assert starts[0] == pytest.approx(done[0])  # not the most recent memset (skip 2)
    assert done[1] <= starts[1] < done[2] <= starts[2]


def test_a_negative_skip_is_a_fault():
    with pytest.raises(nkirt.RuntimeFault, match="negative skip"):
        run(producers_then_consumers({"c": 1, "t": {"j": -1}}))


def test_a_skip_over_an_unknown_loop_variable_is_rejected():
    with pytest.raises(nkirt.NeffError, match="affine"):
        run(producers_then_consumers({"c": 2, "t": {"q": -1}}))


def test_ideal_waits_wait_only_for_the_conflicting_access():
    k = producers_then_consumers(0, first_only=True)  # waits for the last memset, reads a[0]
    coarse, ideal = run(k), run(k, ideal_waits=True)
    first_copy = [e["args"]["start_ns"] for e in events(coarse) if e["cat"] == "vector"][0]
    ideal_copy = [e["args"]["start_ns"] for e in events(ideal) if e["cat"] == "vector"][0]
    first_memset = [e["args"]["completion_ns"] for e in events(ideal) if e["cat"] == "gpsimd"][0]
    assert ideal_copy == pytest.approx(first_memset) and ideal_copy < first_copy
