"""Reads of on-chip tensors before any write (reads that earlier writes cover only in part are
a warning), and matmul accumulation onto unwritten PSUM.

Loops stay symbolic: a write counts for a read when it precedes the read in program order (its
whole loop range) or when it follows the read inside a common loop that runs at least twice
(an earlier iteration wrote it). Coverage is decided on per-dimension boxes.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ...diagnostics import Related
from ...ir.core import Alloc, Kernel, Loop
from ..base import Pass, PassContext
from ..regions import loop_ranges
from .accesses import Access, accesses
from .regions import Footprint, common_kind, convert, covered, footprint


@dataclass(frozen=True)
class Dataflow(Pass):
    """Reports `err_read_before_write`, `nkic_partly_uninitialised_read` and
    `err_psum_accumulate_uninitialized`."""

    name = "dataflow"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        allocs = {id(op.result): loops for op, loops in kernel.walk() if isinstance(op, Alloc)}
        by_tensor: dict[int, list[Access]] = {}
        to_hbm: set[int] = set()  # instructions writing device memory, seen outside the core
        for a in accesses(kernel):
            if a.write and not a.ap.tensor.on_chip:
                to_hbm.add(id(a.inst))
            if a.reachable and a.ap.tensor.on_chip and id(a.ap.tensor) in allocs:
                by_tensor.setdefault(id(a.ap.tensor), []).append(a)
        for items in by_tensor.values():
            regions = _Regions()
            writes = [a for a in items if a.write]
            partly = None
            for a in items:
                if a.write and not _explicit_accumulate(a):
                    continue
                state = _initialised(a, writes, regions, allocs[id(a.ap.tensor)])
                if state == UNWRITTEN or (state == PARTLY and (a.write or id(a.inst) in to_hbm)):
                    _report(ctx, a, partly=state == PARTLY)
                    break
                # a gather (tensor indirection) reads the columns its offsets name at run
                # time, where an unwritten one is a fault: only a read of nothing written is
                # certain here
                if state == PARTLY and partly is None and a.ap.dynamic is None:
                    partly = a
            else:
                if partly is not None:
                    _report_partly(ctx, partly)


class _Regions:
    """Footprints and their concrete boxes, computed once per access and coordinate kind."""

    def __init__(self):
        self._cache: dict[tuple[int, str | None], tuple[Footprint, list[tuple[int, int]]]] = {}

    def get(self, a: Access, kind: str | None = None) -> tuple[Footprint, list[tuple[int, int]]]:
        """The footprint of `a` in coordinates `kind` (its most precise ones if None)."""
        key = (a.index, kind)
        if key not in self._cache:
            ranges = loop_ranges(a.loops)
            f = footprint(a.ap, ranges)
            if kind is not None:
                f = convert(f, kind)
            self._cache[key] = (f, f.intervals(ranges))
        return self._cache[key]


def _explicit_accumulate(a: Access) -> bool:
    return a.inst.opcode in ("nc_matmul", "nc_matmul_mx") and a.inst.attrs.get("accumulate") is True


def _may_precede(w: Access, r: Access, alloc_loops: tuple[Loop, ...]) -> bool:
    """Whether `w` may run before `r`: earlier in program order, or later in the body of a
    common loop that ran before (unless the tensor is allocated afresh inside that loop)."""
    if w.inst is r.inst:
        return False
    if w.index < r.index:
        return True
    return any(
        lp is lq and lp.trip_count >= 2 and all(lp is not x for x in alloc_loops)
        for lp, lq in zip(w.loops, r.loops)
    )


#: What earlier writes left in the region an access reads.
WRITTEN, PARTLY, UNWRITTEN = "written", "partly", "unwritten"


def _initialised(
    r: Access, all_writes: list[Access], regions: _Regions, alloc_loops: tuple[Loop, ...]
) -> str:
    # the common case first: the latest earlier write covers the whole read
    target = regions.get(r)
    for w in reversed(all_writes[: bisect.bisect_left(all_writes, r.index, key=_index)]):
        f = regions.get(w)
        if f[0].kind == target[0].kind and _contains(f[1], target[1]) and w.inst is not r.inst:
            return WRITTEN
    writes = [w for w in all_writes if _may_precede(w, r, alloc_loops)]
    if not writes:
        return UNWRITTEN
    kind = common_kind(target[0], *(regions.get(w)[0] for w in writes))
    box = regions.get(r, kind)[1]
    boxes = [regions.get(w, kind)[1] for w in writes]
    overlap = any(all(lo <= th and tl <= hi for (lo, hi), (tl, th) in zip(b, box)) for b in boxes)
    if kind != "elements":
        # coarse coordinates hull strided accesses: any overlapping write counts
        return WRITTEN if overlap else UNWRITTEN
    if covered(box, boxes):
        return WRITTEN
    return PARTLY if overlap else UNWRITTEN


def _index(a: Access) -> int:
    return a.index


def _contains(outer: list[tuple[int, int]], inner: list[tuple[int, int]]) -> bool:
    return all(lo <= il and ih <= hi for (lo, hi), (il, ih) in zip(outer, inner))


def _report_partly(ctx: PassContext, a: Access) -> None:
    """A read into on-chip memory of which earlier writes cover only a part: valid when the
    kernel never uses what the unwritten part produces (an instruction whose lanes are
    independent, such as a transpose or GpSimd's per-core nonzero_with_count, leaves garbage
    where nothing depends on it), which nkic does not follow; so a warning. Copying such a
    region to device memory is `err_read_before_write`."""
    t = a.ap.tensor
    name = t.label or t.name
    ctx.sink.warning(
        "nkic_partly_uninitialised_read",
        f"{a.inst.opcode}: `{a.operand}` reads `{name}`, of which earlier writes cover only "
        "a part; the rest holds what the memory held before",
        a.inst.loc,
        "write the whole region first (e.g. `nisa.memset`) unless the results computed from "
        "the unwritten part are never used",
        related=(Related(t.loc, f"`{name}` allocated here"),),
    )


def _report(ctx: PassContext, a: Access, partly: bool = False) -> None:
    t = a.ap.tensor
    name = t.label or t.name
    related = (Related(t.loc, f"`{name}` allocated here"),)
    if a.write:
        ctx.sink.error(
            "err_psum_accumulate_uninitialized",
            f"{a.inst.opcode}: `accumulate=True` adds into `{name}`, which no earlier "
            "matmul has written",
            a.inst.loc,
            "start the accumulation group with `accumulate=False` (or leave `accumulate` "
            "unset so the first matmul overwrites)",
            related=related,
        )
        return
    ctx.sink.error(
        "err_read_before_write",
        f"{a.inst.opcode}: `{a.operand}` reads `{name}`, of which earlier writes cover only a "
        "part, into device memory"
        if partly
        else f"{a.inst.opcode}: `{a.operand}` reads `{name}` before anything wrote it",
        a.inst.loc,
        "on-chip tensors start uninitialised: write the tile first (e.g. `nisa.memset` or "
        "`nisa.dma_copy`), or allocate it with `nl.zeros`",
        related=related,
    )
