"""Timing-only simulation handles a 100k-instance program (double-buffered load/copy/store)."""

from __future__ import annotations

import nkirt
from neff_builder import Kernel, write_neff

ITERATIONS = 34_000


def test_hundred_thousand_instances_in_timing_only_mode():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [ITERATIONS * 128, 512])
    y = k.output("y", "bfloat16", [ITERATIONS * 128, 512])
    a = k.sbuf("a", "bfloat16", [128, 512])
    b = k.sbuf("b", "bfloat16", [128, 512], byte=4096)
    rows = {"c": 0, "t": {"i": 128 * 512}}
    with k.loop("i", 0, ITERATIONS):
        k.dma(k.ap(a), k.ap(x, [[512, 128], [1, 512]], rows), queue="dma0")
        k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": k.ap(a)})
        k.dma(k.ap(y, [[512, 128], [1, 512]], rows), k.ap(b), queue="dma1")
    program = k.program()
    load, copy, store = program["body"][0]["body"]
    load["waits"] = [[1, 0]]  # a is free once the previous copy read it
    copy["waits"] = [[0, 0], [2, 0]]  # a loaded; b stored by the previous iteration
    store["waits"] = [[1, 0]]
    profile = nkirt.execute(nkirt.load(write_neff(program)), timing_only=True).profile
    assert profile["instructions"] == 3 * ITERATIONS
    assert profile["engines"]["dma"]["instructions"] == 2 * ITERATIONS
