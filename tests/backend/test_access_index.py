"""The scheduler's access index against brute force: on random programs mixing narrow and
wide, exact and inexact accesses of one HBM tensor of 128 buckets (whole rows, column strips
over many rows, loops whose DMAs rotate over the queues, each on a lane of its own), the
waits are exactly those of the plain index: every access listed in each bucket it meets,
each bucket of a consumer looked back in, no horizon."""

from __future__ import annotations

import numpy as np
import pytest

from nkic.backend import schedule as scheduler
from nkic.backend.schedule import schedule

from .irkit import lowered

ROWS, COLS = 128, 4096  # bfloat16: one row is one bucket of the 1 MiB tensor
PARAMS = f'  param %a : hbm bfloat16[{ROWS}, {COLS}] "a"\n'


def _ap(name: str, offset: str, rows: int, cols: int, row: int = COLS) -> str:
    return f"%{name}[{offset}; [{row}, {rows}], [1, {cols}]]"


def _program(rng: np.random.Generator, n: int) -> str:
    """`n` random DMAs and loops on h: whole rows copied in (exact), column strips written
    (inexact, over up to all rows), rows and strips read back, some in affine loops."""
    lines = [f'  %h = alloc shared_hbm bfloat16[{ROWS}, {COLS}] "h" output']
    lines.append(
        f"  dma_copy(dst={_ap('h', '0', ROWS, COLS)}, src={_ap('a', '0', ROWS, COLS)}) {{}}"
    )
    for k in range(n):
        kind = rng.integers(5)
        rows = int(rng.choice([1, 2, 3, 8, 16, 20, 40, 64, 100, 128]))
        r0 = int(rng.integers(0, ROWS - rows + 1))
        cols = int(rng.choice([64, 512, 2048, COLS]))
        c0 = int(rng.integers(0, COLS - cols + 1)) // 64 * 64
        if rows == 1 and kind == 0:  # an exact write of a row's second half
            cols, c0 = COLS // 2, COLS // 2
        elif rng.integers(2):  # from the middle of a row: a bucket met in part
            c0 = COLS // 2 if cols <= COLS // 2 else 0
        tile = f"t{k}"
        lines.append(f'  %{tile} = alloc sbuf bfloat16[{rows}, {cols}] "{tile}"')
        t = _ap(tile, "0", rows, cols, cols)
        h = _ap("h", str(r0 * COLS + c0), rows, cols)
        if kind == 0:  # rows or a strip copied in from a
            lines.append(
                f"  dma_copy(dst={t}, src={_ap('a', str(r0 * COLS + c0), rows, cols)}) {{}}"
            )
            lines.append(f"  dma_copy(dst={h}, src={t}) {{}}")
        elif kind == 1:  # read back
            lines.append(f"  dma_copy(dst={t}, src={h}) {{}}")
        elif kind == 2:  # read, scale, write back
            lines.append(f"  dma_copy(dst={t}, src={h}) {{}}")
            lines.append(f'  activation(dst={t}, data={t}) {{op="exp"}}')
            lines.append(f"  dma_copy(dst={h}, src={t}) {{}}")
        else:  # a loop over row blocks: its DMAs rotate over the queues
            trips = int(rng.integers(2, 5))
            rows = max(1, min(rows, ROWS // trips))
            r0 = int(rng.integers(0, ROWS - rows * trips + 1))
            lines[-1] = f'  %{tile} = alloc sbuf bfloat16[{rows}, {cols}] "{tile}"'
            t = _ap(tile, "0", rows, cols, cols)
            h = _ap("h", f"{r0 * COLS + c0} + {rows * COLS}*$i{k}", rows, cols)
            lines.append(f"  for $i{k} = 0 to {trips} step 1 affine {{")
            if kind == 3:
                lines.append(f"    dma_copy(dst={t}, src={h}) {{}}")
            else:
                lines.append(f"    dma_copy(dst={t}, src={_ap('a', str(c0), rows, cols)}) {{}}")
                lines.append(f"    dma_copy(dst={h}, src={t}) {{}}")
            lines.append("  }")
    return "\n".join(lines) + "\n"


def _waits(kernel) -> list:
    return [(s.id, s.queue, s.lane, s.waits) for s in schedule(kernel).insts]


@pytest.mark.parametrize("seed", range(4))
def test_the_index_chooses_the_waits_of_every_bucket_looked_at(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    k = lowered(_program(rng, 40), PARAMS, "%h")
    spans, wide, runs, quiet = [], [], [], []
    is_wide, pieces, is_quiet = (
        scheduler._Index._is_wide,
        scheduler._Index._pieces,
        scheduler._Index._quiet,
    )

    def spy_wide(self, a, first, last):
        spans.append(last - first + 1)
        wide.append(is_wide(self, a, first, last))
        return wide[-1]

    def spy_pieces(self, key, first, end):
        out = pieces(self, key, first, end)
        runs.append(any(b2 > b1 for b1, b2 in out))
        return out

    def spy_quiet(self, key, horizon, cid, last):
        quiet.append(is_quiet(self, key, horizon, cid, last))
        return quiet[-1]

    monkeypatch.setattr(scheduler._Index, "_is_wide", spy_wide)
    monkeypatch.setattr(scheduler._Index, "_pieces", spy_pieces)
    monkeypatch.setattr(scheduler._Index, "_quiet", spy_quiet)
    indexed = _waits(k)
    # the program has what the index treats apart: wide inexact accesses, runs of buckets,
    # consumers with nothing to look at, lanes of one rotating DMA
    assert any(wide) and not all(wide)
    assert any(runs) and any(quiet) and not all(quiet)
    assert any("@" in lane for _, _, lane, _ in indexed)
    assert sum(len(w) for *_, w in indexed) > 20
    # every access in each bucket it meets, each bucket looked back in, no horizon
    monkeypatch.setattr(scheduler._Index, "_is_wide", lambda self, a, first, last: False)
    monkeypatch.setattr(
        scheduler._Index,
        "_pieces",
        lambda self, key, first, end: [(b, b) for b in range(first, end + 1)],
    )
    monkeypatch.setattr(scheduler._Index, "_quiet", lambda self, key, horizon, cid, last: False)
    monkeypatch.setattr(scheduler._Index, "_horizon", lambda self, c, base: 0)
    assert _waits(k) == indexed
