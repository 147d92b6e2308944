"""Interval arithmetic over access patterns: which partitions and bytes an AP may touch.

Shared by the bounds, accumulate and allocation passes and by the backend's dependency
analysis. Nothing here enumerates loop iterations: every query costs O(variables).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..ir.affine import Affine
from ..ir.core import AccessPattern, Loop
from .offsets import split

Ranges = Mapping[str, tuple[int, int]]


def loop_ranges(loops: tuple[Loop, ...] | list[Loop]) -> dict[str, tuple[int, int]]:
    """Inclusive [first, last] value of each loop variable (loops must run at least once)."""
    return {lp.var: (lp.start, lp.last) for lp in loops}


def runs(loops: tuple[Loop, ...] | list[Loop]) -> bool:
    return all(lp.trip_count > 0 for lp in loops)


@dataclass(frozen=True)
class Region:
    """What an AP touches: partition `part + [part_lo, part_hi]` and, inside each partition,
    element `free + [free_lo, free_hi]` (on-chip). HBM: `part` is 0 and `free` is the flat
    element index. Units are elements of `itemsize` bytes (the AP's dtype)."""

    part: Affine
    part_lo: int
    part_hi: int
    free: Affine
    free_lo: int
    free_hi: int
    itemsize: int

    def __init__(self, part, part_lo, part_hi, free, free_lo, free_hi, itemsize):
        # (every access of a kernel makes regions: writing the fields into the instance dict
        # costs half of the frozen dataclass's generated __init__)
        d = self.__dict__
        d["part"], d["part_lo"], d["part_hi"] = part, part_lo, part_hi
        d["free"], d["free_lo"], d["free_hi"], d["itemsize"] = free, free_lo, free_hi, itemsize

    def to_bytes(self, base_partition: int = 0, base_byte: int = 0, slack: int = 0) -> Region:
        """The same region in bytes, shifted by a physical base; `slack` widens the end."""
        k = self.itemsize
        return Region(
            self.part + base_partition,
            self.part_lo,
            self.part_hi,
            self.free * k + base_byte,
            self.free_lo * k,
            self.free_hi * k + k - 1 + slack,
            1,
        )

    def part_bounds(self, ranges: Ranges) -> tuple[int, int]:
        lo, hi = self.part.bounds(ranges)
        return lo + self.part_lo, hi + self.part_hi

    def free_bounds(self, ranges: Ranges) -> tuple[int, int]:
        lo, hi = self.free.bounds(ranges)
        return lo + self.free_lo, hi + self.free_hi


def split_offset(
    offset: Affine, row: int, ranges: dict[str, tuple[int, int]] | None = None
) -> tuple[Affine, Affine]:
    """Split an on-chip element offset into (partition, in-partition) parts for rows of `row`
    elements (`offsets.split` over strides (row, 1)): 17*i over rows of 16 moves one partition
    and one element per step, -1*i stays inside the row, and given the loop `ranges` 8*i - 8
    for i in 1..4 is partition 0, elements 0..24 — not partition -1, elements 504..528. Exact
    whenever the in-partition part stays inside [0, row), which the bounds pass checks."""
    if not offset.terms and offset.const >= 0:  # the common constant case, without `split`
        part, free = divmod(offset.const, row)
        return Affine._make(part, ()), Affine._make(free, ())
    part, free = split(offset, (row, 1), ranges)
    return part, free


def _extent(pattern) -> tuple[int, int]:
    lo = hi = 0
    for step, num in pattern:
        lo += min(0, step * (num - 1))
        hi += max(0, step * (num - 1))
    return lo, hi


def row_elems(ap: AccessPattern) -> int:
    """Elements of the AP's dtype per partition of its on-chip tensor."""
    return ap.tensor.bytes_per_partition // ap.itemsize


def region(ap: AccessPattern, ranges: dict[str, tuple[int, int]] | None = None) -> Region:
    t = ap.tensor
    ap = ap.covering()  # tensor indirection: the whole viewed free dimension
    if ap.dynamic is not None:  # a runtime offset (HBM gather/scatter): the whole tensor
        return Region(Affine(0), 0, 0, Affine(0), 0, t.size * t.itemsize // ap.itemsize - 1,
                      ap.itemsize)  # fmt: skip
    if t.on_chip:
        return _rows(ap, row_elems(ap), ranges)
    flo, fhi = _extent(ap.pattern)
    return Region(Affine(0), 0, 0, ap.offset, flo, fhi, ap.itemsize)


def _rows(ap: AccessPattern, row: int, ranges=None) -> Region:
    part, free = split_offset(ap.offset, row, ranges)
    step, num = ap.pattern[0]
    flo, fhi = _extent(ap.pattern[1:])
    return Region(part, 0, num - 1, free, flo, fhi, ap.itemsize)


def hbm_rows(ap: AccessPattern, ranges: Ranges) -> tuple[int, Region] | None:
    """(row bytes, region in rows x bytes) when an HBM AP reads whole-row-strided rows: its
    outer step S exceeds the span of its inner pairs and every access stays inside a row of S
    elements. Two such accesses with the same row length compare row by row, not as one
    flat interval that would make interleaved column blocks look overlapping."""
    if len(ap.pattern) < 2 or ap.pattern[0][0] <= 0 or ap.dynamic is not None:
        return None
    row = ap.pattern[0][0]
    r = _rows(ap, row, ranges)
    lo, hi = r.free_bounds(ranges)
    if lo < 0 or hi >= row:
        return None
    return row * ap.itemsize, r.to_bytes()


def _diff_bounds(
    x: Affine, y: Affine, ranges: Ranges, same: set[str], carried: Loop | None
) -> tuple[int, int]:
    """Bounds of x - y where y's variables in `same` equal x's, y's `carried` variable is
    smaller by a distance in [step, last - start], and y's other variables are independent."""
    lo = hi = x.const - y.const
    coeffs = dict(x.terms)
    for v, c in y.terms:
        if v in same:
            coeffs[v] = coeffs.get(v, 0) - c
        elif carried is not None and v == carried.var:
            coeffs[v] = coeffs.get(v, 0) - c
            a, b = c * carried.step, c * (carried.last - carried.start)
            lo, hi = lo + min(a, b), hi + max(a, b)
        else:
            a, b = ranges[v]
            lo, hi = lo - max(c * a, c * b), hi - min(c * a, c * b)
    for v, c in coeffs.items():
        a, b = ranges[v]
        lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
    return lo, hi


def instances_may_overlap(
    x: Region,
    x_loops: tuple[Loop, ...],
    y: Region,
    y_loops: tuple[Loop, ...],
    equal: tuple[Loop, ...],
    carried: Loop | None = None,
) -> bool:
    """May an instance of access `y` touch what an instance of access `x` touches?

    Loops in `equal` are at the same iteration for both; `carried` (one of their common loops)
    is at an earlier iteration for `y`; every other loop variable is independent.
    """
    if carried is not None and carried.trip_count < 2:
        return False
    if carried is None and not (x.part.terms or y.part.terms or x.free.terms or y.free.terms):
        # (constant regions, as every access of unrolled code has: `_diff_bounds` is one
        # difference)
        d = x.part.const - y.part.const
        if d > y.part_hi - x.part_lo or d < y.part_lo - x.part_hi:
            return False
        d = x.free.const - y.free.const
        return y.free_lo - x.free_hi <= d <= y.free_hi - x.free_lo
    ranges = {lp.var: (lp.start, lp.last) for lp in x_loops}
    for lp in y_loops:
        ranges[lp.var] = (lp.start, lp.last)
    same = {lp.var for lp in equal}
    # the regions intersect iff x - y lies in [y_lo - x_hi, y_hi - x_lo] in both dimensions
    lo, hi = _diff_bounds(x.part, y.part, ranges, same, carried)
    if lo > y.part_hi - x.part_lo or hi < y.part_lo - x.part_hi:
        return False
    lo, hi = _diff_bounds(x.free, y.free, ranges, same, carried)
    return lo <= y.free_hi - x.free_lo and hi >= y.free_lo - x.free_hi
