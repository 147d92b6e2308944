"""Element offsets split into per-dimension parts: mixed-radix digits, settled over loop ranges.

An access pattern's offset is one affine element index `c + sum(a_v * v)` into a row-major
array; the passes need it per dimension: (partition, element of the partition) for on-chip
rows, a tensor's own dimensions for the bounds and race checks, (row, column) for HBM rows.
`split` gives parts `p_0 .. p_n` over strides `s_0 .. s_n` with `sum(p_k * s_k) == offset`
exactly, by two rules:

* Digits keep the sign of what they split (`digits`): the constant and each coefficient split
  on their own, a negative one into the negated digits of its magnitude. -32 over (128, 1) is
  (0, -32), one column per unit; -1*i stays inside the row instead of stepping back a row and
  forward 127 columns; 17*i over (16, 1) is (1*i, 1*i).
* Given the loop ranges, whole units then move from each part into the next coarser one,
  finest part first, so that the part lies inside [0, size) over the ranges whenever a whole
  number of units can put it there (`settle`): 8*i - 8 for i in 1..4 over (512, 1) is
  (0, 8*i - 8), starting at elements 0..24 of partition 0; 64*i - 8 over (64, 1) is
  (i - 1, 56). A part without loop variables always settles: a constant -8 is (-1, 504).

Exactness: when every part but the first lies inside [0, size) over the ranges, the parts are
the element's coordinates in every iteration (in-range mixed-radix digits are unique). The
callers check that condition and otherwise report an out-of-bounds access or fall back to
coarser coordinates, so no split claims a wrong footprint; the rules only decide how often the
condition holds. It always holds for an index that moves every dimension a loop variable
touches in one direction (as slicing produces) and stays inside the array: the signed digits
of each coefficient are then exactly its steps per dimension, and settling fixes the constants.
A variable moving two dimensions opposite ways (`t[3 - i, 8*i]`, offset 192 - 56*i over (64, 1))
may not split in range; such an access is reported or falls back, as before.

Where the three splits this replaces disagreed, the exact choice was kept:

* Constants: the (partition, element) split took floor digits, the race and bounds checks kept
  the sign. Settled over ranges both give the one in-range split when there is one; they differ
  only where no ranges are known or a part cannot fit, and there the signed form is right for
  loops starting past zero (`8*i - 8` is element 8*i - 8, not 504 + 8*i of partition -1).
* Coefficients: the bounds check put each one wholly into the first dimension whose stride
  divides it, so `a[k, k, :]` of an HBM (8, 4, 512) tensor, offset 2560*k, was index 5*k of
  dimension 1 and a false out-of-bounds; its digits (k, k, 0) are the coordinates.
* Settling: only the (partition, element) split moved units, and only into the partition. The
  race check's boxes rejected 64*i - 8 over (64, 1), parts (i, -8), and fell back to a coarser
  footprint; the bounds check reported `a[i - 1, 56:64]` of an HBM (8, 64) tensor as out of
  bounds. Both now see (i - 1, 56).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..ir.affine import Affine

Ranges = Mapping[str, tuple[int, int]]


def strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a row-major array of `shape`: (2, 3, 4) has strides [12, 4, 1]."""
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def digits(value: int, strides: Sequence[int]) -> list[int]:
    """Mixed-radix digits of `value` over `strides` (coarsest first, each a multiple of the
    next, the last 1), with the value's sign: -32 over (128, 1) is [0, -32], 300 is [2, 44].
    The first digit is unbounded, the others lie strictly between -size and size."""
    sign, rest = (-1, -value) if value < 0 else (1, value)
    out = []
    for s in strides:
        q, rest = divmod(rest, s)
        out.append(sign * q)
    return out


def split(offset: Affine, strides: Sequence[int], ranges: Ranges | None = None) -> list[Affine]:
    """Parts of `offset` along `strides` (see `digits`), settled over the inclusive loop
    `ranges` (see `settle`); they always recombine to `offset`."""
    parts = [Affine._make(d, ()) for d in digits(offset.const, strides)]
    for var, coeff in offset.terms:
        for k, d in enumerate(digits(coeff, strides)):
            if d:
                parts[k] = parts[k] + Affine._make(0, ((var, d),))
    return settle(parts, strides, ranges)


def settle(parts: list[Affine], strides: Sequence[int], ranges: Ranges | None) -> list[Affine]:
    """Move whole units from each part into the next coarser one, finest first, wherever that
    puts the part inside [0, size) over `ranges`; a part the ranges cannot place stays as it is.
    Without ranges only parts free of loop variables move."""
    parts = list(parts)
    for k in range(len(parts) - 1, 0, -1):
        size = strides[k - 1] // strides[k]
        carry = _whole_units(parts[k], size, ranges)
        if carry:
            parts[k] = parts[k] - carry * size
            parts[k - 1] = parts[k - 1] + carry
    return parts


def _whole_units(part: Affine, size: int, ranges: Ranges | None) -> int:
    """The number of whole `size` units below every value of `part`, if they are the same for
    all of its values (it lies inside one unit), else 0."""
    if part.terms and ranges is None:
        return 0
    lo, hi = part.bounds(ranges or {})
    return lo // size if lo // size == hi // size else 0
