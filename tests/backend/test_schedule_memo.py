"""The schedule of a kernel is computed once for the neff writer, the assembly listing and
the resource report, and again when the program changed."""

from __future__ import annotations

from nkic.backend.schedule import schedule_once

from .irkit import lowered
from .test_covering_writes import BODY, PARAMS


def test_the_same_program_is_scheduled_once():
    k = lowered(BODY, PARAMS, "%o")
    first = schedule_once(k)
    assert schedule_once(k) is first


def test_a_changed_program_is_scheduled_again():
    k = lowered(BODY, PARAMS, "%o")
    first = schedule_once(k)
    act = next(op for op, _ in k.walk() if getattr(op, "opcode", "") == "activation")
    act.engine = "gpsimd"  # another engine: other queues and waits
    second = schedule_once(k)
    assert second is not first
    assert second.by_inst[act].engine == "gpsimd"
    y = next(ap.tensor for name, ap in act.aps() if name == "dst")
    y.address = (0, 4096)  # moved: other bytes, other conflicts
    assert schedule_once(k) is not second
    k.body.pop()  # an instruction fewer
    third = schedule_once(k)
    assert len(third.insts) == len(second.insts) - 1
