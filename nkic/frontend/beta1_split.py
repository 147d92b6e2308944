"""Beta 1 instructions on index grids of high rank, split into instructions the engines run.

An index grid of `nl.mgrid` may have more axes than an engine's access pattern has dimensions
(one partition dimension and at most four free ones): `t[i_p, i_d_x + i_d_y, ...]` on a 7-D
grid gives operands of six free dimensions. Beta 1's compiler lowered such an elementwise
operation to several instructions; nkic does the same, first merging free dimensions that are
contiguous in every operand (one instruction walks them as one), then issuing one instruction
per position of the leading free dimensions that remain too many. Every element is computed
by exactly one of them, as the single instruction would have.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from ..ir.core import AccessPattern

#: One partition dimension and four free ones (the engines' access-pattern limit).
MAX_AP_DIMS = 5

#: Instructions whose tile operands (`in` / `out` roles) are walked element by element in step:
#: splitting their common iteration space splits the work.
ELEMENTWISE = frozenset({"tensor_tensor", "tensor_scalar", "tensor_copy", "activation", "memset"})


def split(name: str, operands: dict, tiles: tuple[str, ...]) -> list[dict]:
    """`operands` as one or several instructions' operands; `tiles` names the operands that
    iterate together (the others, per-partition scalars, are shared)."""
    aps = {k: operands[k] for k in tiles if isinstance(operands.get(k), AccessPattern)}
    if name not in ELEMENTWISE or not aps:
        return [operands]
    if not any(ap.tensor.on_chip and len(ap.pattern) > MAX_AP_DIMS for ap in aps.values()):
        return [operands]
    shapes = {ap.shape for ap in aps.values()}
    if len(shapes) != 1 or any(not ap.tensor.on_chip or ap.dynamic for ap in aps.values()):
        return [operands]  # not one iteration space: the operand checks report it
    aps = _merged(aps)
    rank = len(next(iter(aps.values())).pattern)
    if rank <= MAX_AP_DIMS:
        return [{**operands, **aps}]
    peel = rank - MAX_AP_DIMS  # leading free dimensions 1 .. peel
    sizes = next(iter(aps.values())).shape[1 : 1 + peel]
    parts = []
    for position in itertools.product(*(range(n) for n in sizes)):
        part = dict(operands)
        for key, ap in aps.items():
            moved = sum(i * step for i, (step, _) in zip(position, ap.pattern[1 : 1 + peel]))
            pattern = ap.pattern[:1] + ap.pattern[1 + peel :]
            part[key] = replace(ap, offset=ap.offset + moved, pattern=pattern)
        parts.append(part)
    return parts


def _merged(aps: dict[str, AccessPattern]) -> dict[str, AccessPattern]:
    """Drop free dimensions of size 1 and merge neighbours contiguous in every operand."""
    patterns = {k: list(ap.pattern) for k, ap in aps.items()}
    first = next(iter(patterns.values()))
    keep = [0] + [d for d in range(1, len(first)) if first[d][1] != 1]
    if len(keep) == 1:
        keep.append(1)  # an on-chip pattern keeps one free dimension
    patterns = {k: [p[d] for d in keep] for k, p in patterns.items()}
    d = len(next(iter(patterns.values()))) - 2
    while d >= 1:
        if all(p[d][0] == p[d + 1][0] * p[d + 1][1] for p in patterns.values()):
            for p in patterns.values():
                p[d : d + 2] = [(p[d + 1][0], p[d][1] * p[d + 1][1])]
        d -= 1
    return {k: replace(aps[k], pattern=tuple(patterns[k])) for k in aps}
