"""Newer writes that together cover the bytes a consumer reads in a bucket hide older writes
there, as one covering write does: the scheduler's look-back stops at them, and every conflict
is still ordered (the brute-force oracle)."""

from __future__ import annotations

from nkic.backend.schedule import schedule

from .irkit import lowered
from .oracle import check_waits

PARAMS = '  param %a : hbm bfloat16[32, 256] "a"\n'


def T(name: str, p: int, f: int, offset: str = "0", row: int | None = None) -> str:
    return f"%{name}[{offset}; [{row or f}, {p}], [1, {f}]]"


# x is filled whole (by the first load), then rewritten in two column halves, an eighth at a
# time, on other queues; the activation reads all of it.
BODY = (
    f"""
  %o = alloc shared_hbm bfloat16[32, 256] "o" output
  %x = alloc sbuf bfloat16[32, 256] "x"
  dma_copy(dst={T("x", 32, 256)}, src={T("a", 32, 256)}) {{}}
  memset(dst={T("x", 32, 128, "0", 256)}) {{value=1.0}}
"""
    + "".join(
        f"  dma_copy(dst={T('x', 32, 16, str(128 + 16 * k), 256)}, "
        f"src={T('a', 32, 16, str(128 + 16 * k), 256)}) {{}}\n"
        for k in range(8)
    )
    + f"""
  %y = alloc sbuf bfloat16[32, 256] "y"
  activation(dst={T("y", 32, 256)}, data={T("x", 32, 256)}) {{op="exp"}}
  dma_copy(dst={T("o", 32, 256)}, src={T("y", 32, 256)}) {{}}
"""
)


def test_pieces_that_cover_a_read_hide_the_write_before_them():
    k = lowered(BODY, PARAMS, "%o")
    s = schedule(k)
    act = next(x for x in s.insts if x.inst.opcode == "activation")
    first_load = s.insts[0]
    assert first_load.inst.opcode == "dma_copy"
    earlier, _ = _candidates(s, act)
    # the memset and the eight loads of the second half cover x: the first load is hidden
    assert first_load not in earlier
    assert {x.inst.opcode for x in earlier} == {"memset", "dma_copy"}
    assert len(earlier) == 9
    assert check_waits(k) == []


def test_pieces_that_leave_a_gap_do_not_hide_it():
    gap = BODY.replace(
        T("x", 32, 16, str(128 + 16 * 7), 256), T("x", 32, 8, str(128 + 16 * 7), 256)
    )
    gap = gap.replace(T("a", 32, 16, str(128 + 16 * 7), 256), T("a", 32, 8, str(128 + 16 * 7), 256))
    k = lowered(gap, PARAMS, "%o")
    s = schedule(k)
    act = next(x for x in s.insts if x.inst.opcode == "activation")
    earlier, _ = _candidates(s, act)
    assert s.insts[0] in earlier
    assert check_waits(k) == []


def _candidates(s, c):
    from nkic.backend.schedule import _Index

    index = _Index({a.key for x in s.insts for a in x.accesses if a.write})
    for x in s.insts:
        index.add(x)
    return index.candidates(c, c.id, {})
