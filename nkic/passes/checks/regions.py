"""Symbolic footprints of access patterns: per-dimension affine boxes over loop variables.

Shared by the dataflow and race checks. An access is mapped onto its tensor's dimensions when
every [step, num] pair moves along one dimension without carrying into the next; an on-chip
access that cannot be (e.g. a dtype-reinterpreting view) maps onto (partition, byte); anything
else falls back to a byte range over the whole storage. Nothing here enumerates loop
iterations: extents are intervals derived with `Affine.bounds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...ir.affine import Affine
from ...ir.core import AccessPattern, Tensor
from .. import offsets

Ranges = Mapping[str, tuple[int, int]]


#: Footprint coordinates from the most to the least precise.
KINDS = ("elements", "rows", "flat")


@dataclass(frozen=True)
class Footprint:
    """`starts[k] + [0, extents[k]]` on each dimension `k` (inclusive extents).

    `kind` names the coordinates: `elements` indexes the tensor's own dimensions, `rows` is
    (partition, byte within the partition) of an on-chip tensor, `flat` is one byte offset into
    the storage.
    """

    tensor: Tensor
    starts: tuple[Affine, ...]
    extents: tuple[int, ...]
    kind: str

    def intervals(self, ranges: Ranges) -> list[tuple[int, int]]:
        out = []
        for a, e in zip(self.starts, self.extents):
            lo, hi = a.bounds(ranges)
            out.append((lo, hi + e))
        return out


def footprint(ap: AccessPattern, ranges: Ranges) -> Footprint:
    """The most precise footprint of `ap` while the loop variables range over `ranges`."""
    t = ap.tensor
    ap = ap.covering()  # tensor indirection: the whole viewed free dimension
    if ap.dynamic is not None:  # a runtime offset (HBM gather/scatter): the whole storage
        return Footprint(t, (Affine(0),), (t.size * t.itemsize - 1,), "flat")
    if ap.dtype == t.dtype:
        boxed = _box(ap, ranges, t.shape)
        if boxed is not None:
            return Footprint(t, *boxed, "elements")
    if t.on_chip and t.bytes_per_partition % ap.itemsize == 0:
        boxed = _box(ap, ranges, (t.shape[0], t.bytes_per_partition // ap.itemsize))
        if boxed is not None:
            (p, f), (ep, ef) = boxed
            size = ap.itemsize
            return Footprint(t, (p, f * size), (ep, ef * size + size - 1), "rows")
    size = ap.itemsize
    extent = sum((n - 1) * abs(s) for s, n in ap.pattern) * size + size - 1
    low_shift = sum((n - 1) * s for s, n in ap.pattern if s < 0) * size
    return Footprint(t, (ap.offset * size + low_shift,), (extent,), "flat")


def _box(
    ap: AccessPattern, ranges: Ranges, shape: tuple[int, ...]
) -> tuple[tuple[Affine, ...], tuple[int, ...]] | None:
    """Starts and extents of `ap` on the dimensions of a row-major array of `shape` (in units of
    `ap.dtype`), or None when a [step, num] pair does not move along a single dimension."""
    if not shape:
        return None
    strides = offsets.strides(shape)
    starts = offsets.split(ap.offset, strides, ranges)
    extents = [0] * len(shape)
    for step, num in ap.pattern:
        if num == 1:
            continue
        dim = next((k for k, s in enumerate(strides) if step > 0 and step % s == 0), None)
        if dim is None:
            return None
        extents[dim] += (num - 1) * (step // strides[dim])
    for a, e, d in zip(starts, extents, shape):
        lo, hi = a.bounds(ranges)
        if lo < 0 or hi + e >= d:
            return None
    return tuple(starts), tuple(extents)


def common_kind(*footprints: Footprint) -> str:
    return max((f.kind for f in footprints), key=KINDS.index)


def convert(f: Footprint, kind: str) -> Footprint:
    """`f` in the coarser coordinates `kind`."""
    if f.kind == kind:
        return f
    t = f.tensor
    if f.kind == "elements":
        strides = offsets.strides(t.shape)
        size = t.itemsize
        if kind == "rows":
            start = sum((a * (s * size) for a, s in zip(f.starts[1:], strides[1:])), Affine(0))
            extent = sum(e * s * size for e, s in zip(f.extents[1:], strides[1:])) + size - 1
            return Footprint(t, (f.starts[0], start), (f.extents[0], extent), "rows")
        start = sum((a * (s * size) for a, s in zip(f.starts, strides)), Affine(0))
        extent = sum(e * s * size for e, s in zip(f.extents, strides)) + size - 1
        return Footprint(t, (start,), (extent,), "flat")
    row = t.bytes_per_partition
    start = f.starts[0] * row + f.starts[1]
    return Footprint(t, (start,), (f.extents[0] * row + f.extents[1],), "flat")


def comparable(a: Footprint, b: Footprint) -> tuple[Footprint, Footprint]:
    """Both footprints in the same (the coarser of their) coordinates."""
    kind = common_kind(a, b)
    return convert(a, kind), convert(b, kind)


def covered(target: list[tuple[int, int]], boxes: list[list[tuple[int, int]]]) -> bool:
    """Whether the box `target` lies inside the union of `boxes` (coordinate compression)."""
    boxes = [
        b for b in boxes if all(lo <= th and tl <= hi for (lo, hi), (tl, th) in zip(b, target))
    ]
    if not boxes:
        return False
    cuts = []
    for k, (tl, th) in enumerate(target):
        pts = {tl, th + 1}
        for b in boxes:
            lo, hi = b[k]
            pts.update(p for p in (lo, hi + 1) if tl < p <= th)
        cuts.append(sorted(pts))
    cells = 1
    for c in cuts:
        cells *= len(c) - 1
    if cells > 20_000:  # too fine a grid to decide cheaply: rather miss a report than invent one
        return True
    return _cells_covered(cuts, boxes, 0, [])


def _cells_covered(cuts, boxes, k, prefix) -> bool:
    if k == len(cuts):
        return any(all(lo <= p <= hi for p, (lo, hi) in zip(prefix, b)) for b in boxes)
    return all(_cells_covered(cuts, boxes, k + 1, prefix + [p]) for p in cuts[k][:-1])


def describe(ap: AccessPattern, ranges: Ranges) -> str:
    """The region `ap` touches while the loop variables range over `ranges`, as `t[0:128, 0:512]`
    (or `t[0:128, bytes 0:1024]` for reinterpreting views, `t[bytes 0:64]` for other patterns)."""
    t = ap.tensor
    f = footprint(ap, ranges)
    spans = [f"{lo}:{hi + 1}" for lo, hi in f.intervals(ranges)]
    if f.kind != "elements":
        spans[-1] = f"bytes {spans[-1]}"
    return f"{t.label or t.name}[{', '.join(spans)}]"
