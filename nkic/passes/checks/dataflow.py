"""Reads of on-chip tensors before any write (reads that earlier writes cover only in part are
a warning), and matmul accumulation onto unwritten PSUM.

Loops stay symbolic: a write counts for a read when it precedes the read in program order (its
whole loop range) or when it follows the read inside a common loop that runs at least twice
(an earlier iteration wrote it). Coverage is decided on per-dimension boxes.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from ...diagnostics import Related
from ...ir.core import Alloc, Kernel, Loop
from ..base import Pass, PassContext
from ..regions import loop_ranges
from .accesses import Access, shared_accesses
from .regions import KINDS, Footprint, convert, covered, footprint


@dataclass(frozen=True)
class Dataflow(Pass):
    """Reports `err_read_before_write`, `nkic_partly_uninitialised_read` and
    `err_psum_accumulate_uninitialized`."""

    name = "dataflow"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        allocs = {id(op.result): loops for op, loops in kernel.walk() if isinstance(op, Alloc)}
        by_tensor: dict[int, list[Access]] = {}
        to_hbm: set[int] = set()  # instructions writing device memory, seen outside the core
        all_accesses = shared_accesses(kernel, ctx)
        for a in all_accesses:
            if a.write and not a.ap.tensor.on_chip:
                to_hbm.add(id(a.inst))
            if a.reachable and a.ap.tensor.on_chip and id(a.ap.tensor) in allocs:
                by_tensor.setdefault(id(a.ap.tensor), []).append(a)
        loop_ends = _loop_ends(all_accesses)
        regions = _Regions()
        clean: set[tuple] = set()  # signatures of tensors whose every read was written
        for items in by_tensor.values():
            alloc_loops = allocs[id(items[0].ap.tensor)]
            signature = _signature(items, alloc_loops, regions, to_hbm)
            if signature is not None and signature in clean:
                continue
            if _check_tensor(ctx, items, regions, alloc_loops, loop_ends, to_hbm):
                if signature is not None:
                    clean.add(signature)


def _check_tensor(
    ctx: PassContext,
    items: list[Access],
    regions: _Regions,
    alloc_loops: tuple[Loop, ...],
    loop_ends: dict[int, int],
    to_hbm: set[int],
) -> bool:
    """Report the first read of one tensor's `items` that no earlier write covers (or a read
    that they cover only in part); True if there is nothing to report."""
    writes = _Writes([a for a in items if a.write], regions)
    partly = None
    for a in items:
        if a.write and not _explicit_accumulate(a):
            continue
        state = _initialised(a, writes, alloc_loops, loop_ends)
        if state == UNWRITTEN or (state == PARTLY and (a.write or id(a.inst) in to_hbm)):
            _report(ctx, a, partly=state == PARTLY)
            return False
        # a gather (tensor indirection) reads the columns its offsets name at run time, where
        # an unwritten one is a fault: only a read of nothing written is certain here
        if state == PARTLY and partly is None and a.ap.dynamic is None:
            partly = a
    if partly is not None:
        _report_partly(ctx, partly)
        return False
    return True


def _signature(
    items: list[Access], alloc_loops: tuple[Loop, ...], regions: _Regions, to_hbm: set[int]
) -> tuple | None:
    """What `_check_tensor` reads of a tensor allocated and accessed outside loops (an
    unrolled loop's tiles): its buffer, dtype and shape, and per access in program order
    whether it writes (and accumulates explicitly), has a runtime offset, is copied to device
    memory, which instruction it is (numbered by first access), its footprint's coordinates
    and box. Outside loops a footprint is its box, and a write precedes a read when it comes
    earlier in the list, so tensors with the same signature get the same answer. None for a
    tensor in a loop (iterations and loop ends decide there)."""
    if alloc_loops:
        return None
    t = items[0].ap.tensor
    parts: list = [t.buffer, t.dtype, t.shape]
    numbers: dict[int, int] = {}
    for a in items:
        if a.loops:
            return None
        inst = a.inst
        number = numbers.setdefault(id(inst), len(numbers))
        f, box = regions.get(a)
        parts.append(
            (
                a.write,
                _explicit_accumulate(a),
                a.ap.dynamic is None,
                id(inst) in to_hbm,
                number,
                f.kind,
                box,
            )
        )
    return tuple(parts)


class _Regions:
    """Footprints and their concrete boxes of accesses, computed once per access and
    coordinate kind; accesses outside loops at the same constant pattern of tensors of the
    same buffer, shape and dtype share them (an unrolled kernel repeats its tiles' patterns,
    each iteration on tiles of its own). Only the footprint's kind and box are read."""

    def __init__(self):
        self._cache: dict[tuple[int, str | None], tuple[Footprint, Box]] = {}
        self._fixed: dict[tuple, tuple[Footprint, Box]] = {}

    def get(self, a: Access, kind: str | None = None) -> tuple[Footprint, Box]:
        """The footprint of `a` in coordinates `kind` (its most precise ones if None)."""
        key = (a.index, kind)
        found = self._cache.get(key)
        if found is None:
            ap = a.ap
            fixed = not a.loops and ap.dynamic is None and not ap.offset.terms
            same = None
            if fixed:
                t = ap.tensor
                same = (t.buffer, t.shape, t.dtype, ap.offset.const, ap.pattern, ap.dtype, kind)
                found = self._fixed.get(same)
            if found is None:
                ranges = loop_ranges(a.loops)
                f = footprint(ap, ranges)
                if kind is not None:
                    f = convert(f, kind)
                found = (f, tuple(f.intervals(ranges)))
                if fixed:
                    self._fixed[same] = found
            self._cache[key] = found
        return found


#: A concrete box: inclusive (low, high) on each coordinate.
Box = tuple[tuple[int, int], ...]


def _explicit_accumulate(a: Access) -> bool:
    return a.inst.opcode in ("nc_matmul", "nc_matmul_mx") and a.inst.attrs.get("accumulate") is True


def _loop_ends(items: list[Access]) -> dict[int, int]:
    """The index of the last access inside each loop (a loop's accesses are consecutive)."""
    ends: dict[int, int] = {}
    for a in items:
        for lp in a.loops:
            ends[id(lp)] = a.index
    return ends


def _horizon(r: Access, alloc_loops: tuple[Loop, ...], loop_ends: dict[int, int]) -> int:
    """The last access index of a write that may run before `r` (other than `r`'s own
    instruction's): every earlier one, and every later one in the body of a loop around `r`
    that runs at least twice (an earlier iteration wrote it), unless the tensor is allocated
    afresh inside that loop. A loop's body is a contiguous run of program order, so this is
    the end of the outermost such loop, else just before `r`."""
    for lp in r.loops:
        if lp.trip_count >= 2 and all(lp is not x for x in alloc_loops):
            return loop_ends[id(lp)]
    return r.index - 1


#: What earlier writes left in the region an access reads.
WRITTEN, PARTLY, UNWRITTEN = "written", "partly", "unwritten"


class _Writes:
    """The writes of one tensor in program order, with a spatial index per coordinate kind, so
    that a read looks only at the writes that overlap it: the cost of checking a kernel grows
    with its number of accesses, not with its square."""

    def __init__(self, writes: list[Access], regions: _Regions):
        self.writes = writes
        self.regions = regions
        self.indices = [w.index for w in writes]
        self.kinds = [regions.get(w)[0].kind for w in writes]
        #: positions (in `writes`) of the writes whose own coordinates are each kind
        self.of_kind: dict[str, list[int]] = {}
        for i, k in enumerate(self.kinds):
            self.of_kind.setdefault(k, []).append(i)
        self._grids: dict[str, _Grid] = {}

    def grid(self, kind: str) -> _Grid:
        """The index of the writes expressible in `kind` coordinates (no coarser ones)."""
        if kind not in self._grids:
            rank = KINDS.index(kind)
            boxes = [
                (i, self.regions.get(w, kind)[1])
                for i, w in enumerate(self.writes)
                if KINDS.index(self.kinds[i]) <= rank
            ]
            self._grids[kind] = _Grid(boxes)
        return self._grids[kind]

    def any_of_kind(self, kind: str, stop: int, r: Access) -> bool:
        """Whether a write among the first `stop`, other than `r`'s instruction's, is in
        `kind` coordinates."""
        positions = self.of_kind.get(kind, ())
        n = bisect.bisect_left(positions, stop)
        return any(self.writes[p].inst is not r.inst for p in reversed(positions[:n]))


class _Grid:
    """Distinct write boxes bucketed on the one coordinate that tells them apart best (each box
    with the positions of the writes that have it, in program order); boxes spanning many
    buckets are kept aside and always looked at."""

    SPAN = 16  # buckets a box may span before it is kept aside

    def __init__(self, boxes: list[tuple[int, Box]]):
        self.positions: dict[Box, list[int]] = {}
        for i, box in boxes:
            self.positions.setdefault(box, []).append(i)
        distinct = list(self.positions)
        self.buckets: dict[int, list[Box]] = {}
        self.wide: list[Box] = []
        self.dim, self.origin, self.width = 0, 0, 1
        if not distinct:
            return
        dims = len(distinct[0])
        self.dim = max(range(dims), key=lambda d: len({b[d][0] for b in distinct}))
        extents = sorted(b[self.dim][1] - b[self.dim][0] + 1 for b in distinct)
        self.width = max(1, extents[len(extents) // 2])
        self.origin = min(b[self.dim][0] for b in distinct)
        for box in distinct:
            lo, hi = self._bucket(box[self.dim][0]), self._bucket(box[self.dim][1])
            if hi - lo >= self.SPAN:
                self.wide.append(box)
            else:
                for b in range(lo, hi + 1):
                    self.buckets.setdefault(b, []).append(box)

    def _bucket(self, x: int) -> int:
        return (x - self.origin) // self.width

    def overlapping(self, box: Box, present: Callable[[list[int]], bool]) -> list[Box]:
        """The distinct boxes that overlap `box` and have a write for which `present` holds."""
        lo, hi = self._bucket(box[self.dim][0]), self._bucket(box[self.dim][1])
        if hi - lo + 1 <= len(self.buckets):
            lists = [self.buckets[b] for b in range(lo, hi + 1) if b in self.buckets]
        else:
            lists = [bs for b, bs in self.buckets.items() if lo <= b <= hi]
        seen: set[Box] = set()
        out = []
        for candidates in (*lists, self.wide):
            for b in candidates:
                if b not in seen and _overlaps(b, box):
                    seen.add(b)
                    if present(self.positions[b]):
                        out.append(b)
        return out

    def containing(self, box: Box, present: Callable[[list[int]], bool]) -> bool:
        """Whether a box containing `box` has a write for which `present` holds: such a box
        is in the bucket of `box`'s low end or aside."""
        for b in (*self.buckets.get(self._bucket(box[self.dim][0]), ()), *self.wide):
            if _contains(b, box) and present(self.positions[b]):
                return True
        return False


def _initialised(
    r: Access, writes: _Writes, alloc_loops: tuple[Loop, ...], loop_ends: dict[int, int]
) -> str:
    regions = writes.regions
    target = regions.get(r)
    before = bisect.bisect_left(writes.indices, r.index)

    # the common case first: an earlier write in the same coordinates covers the whole read
    def earlier_same_kind(positions: list[int]) -> bool:
        for p in positions:
            if p >= before:
                return False
            if writes.kinds[p] == target[0].kind and writes.writes[p].inst is not r.inst:
                return True
        return False

    if writes.grid(target[0].kind).containing(target[1], earlier_same_kind):
        return WRITTEN
    # every write that may precede the read: the first `stop` ones, but r's instruction's
    stop = bisect.bisect_right(writes.indices, _horizon(r, alloc_loops, loop_ends))

    def may_precede(positions: list[int]) -> bool:
        for p in positions:
            if p >= stop:
                return False
            if writes.writes[p].inst is not r.inst:
                return True
        return False

    kind = target[0].kind
    for k in KINDS[KINDS.index(kind) + 1 :]:
        if writes.any_of_kind(k, stop, r):
            kind = k
    box = regions.get(r, kind)[1]
    boxes = writes.grid(kind).overlapping(box, may_precede)
    if kind != "elements":
        # coarse coordinates hull strided accesses: any overlapping write counts
        return WRITTEN if boxes else UNWRITTEN
    if covered(list(box), [list(b) for b in boxes]):
        return WRITTEN
    return PARTLY if boxes else UNWRITTEN


def _overlaps(a: Box, b: Box) -> bool:
    return all(lo <= th and tl <= hi for (lo, hi), (tl, th) in zip(a, b))


def _contains(outer: Box, inner: Box) -> bool:
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
