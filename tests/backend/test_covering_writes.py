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


def _small_accesses_body(rng) -> str:
    """Loads, memsets and reads of x (one bucket per partition) at random windows, mostly a
    few elements wide, some of a whole row."""
    lines = [
        '  %o = alloc shared_hbm bfloat16[32, 256] "o" output',
        '  %x = alloc sbuf bfloat16[32, 1024] "x"',
        '  %y = alloc sbuf bfloat16[32, 1024] "y"',
        f"  dma_copy(dst={T('y', 32, 1024)}, src={T('a', 32, 256, '0', 256)}) {{}}",
    ]
    for _ in range(60):
        f = int(rng.choice([1, 2, 8, 64, 256]))
        col, p = int(rng.integers(0, 1025 - f)), int(rng.choice([1, 16, 32]))
        window = T("x", p, f, str(col), 1024)
        kind = rng.random()
        if kind < 0.3:
            lines.append(f"  memset(dst={window}) {{value=1.0}}")
        elif kind < 0.5:
            src = T("a", p, min(f, 256), str(int(rng.integers(0, 257 - min(f, 256)))), 256)
            lines.append(
                f"  dma_copy(dst={T('x', p, min(f, 256), str(col), 1024)}, src={src}) {{}}"
            )
        else:
            lines.append(
                f'  activation(dst={T("y", p, f, str(col), 1024)}, data={window}) {{op="exp"}}'
            )
    lines.append(f"  dma_copy(dst={T('o', 32, 256)}, src={T('y', 32, 256, '0', 1024)}) {{}}")
    return "\n".join(lines) + "\n"


def test_look_backs_of_small_accesses_skip_only_what_they_do_not_meet(monkeypatch):
    # an access within one sub-bucket looks back only at what touches that sub-bucket: the
    # waits are those of the look-back over every access of the bucket
    import numpy as np

    from nkic.backend import schedule as scheduler

    rng = np.random.default_rng(3)
    for n in range(6):
        k = lowered(_small_accesses_body(rng), PARAMS, "%o")
        indexed = [(s.queue, s.waits) for s in schedule(k).insts]
        monkeypatch.setattr(scheduler, "SUB_SPAN", 0)  # every access in the bucket
        plain = [(s.queue, s.waits) for s in schedule(k).insts]
        monkeypatch.undo()
        assert indexed == plain
        assert sum(len(w) for _, w in indexed) > 20
        assert n or check_waits(k) == []
