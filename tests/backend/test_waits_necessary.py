"""Waits are exactly the dependencies: for the example kernels, every emitted wait is needed
(removing it leaves a conflicting access unordered, by happens-before over the instances) and
none is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkic import driver
from nkic.backend.schedule import schedule
from nkic.frontend import TensorSpec

from . import hb

ROOT = Path(__file__).resolve().parents[2]
BF16 = "bfloat16"
CASES = {
    "tensor_add": ("examples/tensor_add.py", {"a": (128, 64), "b": (128, 64)}),
    "tiled_add": ("examples/tiled_add.py", {"a": (384, 64), "b": (384, 64)}),
    "softmax": ("examples/softmax.py", {"x": (384, 64)}),
    # its `range` loops unroll: the waits of loop-free code
    "matmul_tiled": ("examples/matmul_tiled.py", {"lhsT": (256, 256), "rhs": (256, 1024)}),
}


def compiled(name: str):
    path, shapes = CASES[name]
    args = {k: TensorSpec(shape, BF16) for k, shape in shapes.items()}
    res = driver.compile_file(str(ROOT / path), name, args, "trn2")
    assert res.ok, res.diagnostics
    return res.ir


@pytest.mark.parametrize("name", list(CASES))
def test_every_wait_is_needed_and_every_conflict_ordered(name):
    kernel = compiled(name)
    sched = schedule(kernel)
    assert sum(len(s.waits) for s in sched.insts) > 0
    assert hb.unneeded_waits(kernel, sched) == []


def test_the_checker_sees_a_missing_wait_and_a_redundant_one():
    kernel = compiled("tiled_add")
    sched = schedule(kernel)
    insts = hb.instances(kernel, sched)
    pairs = hb.conflicts(kernel, sched, insts)
    add = next(s for s in sched.insts if s.inst.opcode == "tensor_tensor")
    without = {s.id: s.waits for s in sched.insts}
    without[add.id] = []
    assert hb.unordered(sched, insts, pairs, without)  # reads its tiles before the loads end
    store = next(s for s in sched.insts if s.inst.opcode == "dma_copy" and s.id > add.id)
    extra = dict(without)
    extra[add.id] = add.waits
    extra[store.id] = [*store.waits, *add.waits]  # the loads are already ordered by the add
    assert not hb.unordered(sched, insts, pairs, extra)
