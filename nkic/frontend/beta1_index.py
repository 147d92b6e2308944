"""Beta 1 index grids: `nl.arange` and `nl.mgrid` values and the tensor views they select.

In Beta 1 a tensor is indexed with affine expressions of index grids: `nl.arange(128)[:, None]`
varies along the first axis of a two-dimensional grid, `nl.arange(512)[None, :]` along the
second, and `t[i * 128 + i_p, i_f]` selects rows `i*128 .. i*128+127` and every column. Each
grid is `start + step * k` for `k` in `0 .. size-1` along one axis; adding a compile-time value
(an int or a loop variable) moves `start`, multiplying scales both. Indexing a tensor with grids
whose axes follow the tensor's dimensions in order is an ordinary strided view (what NKI 0.2+
writes as slices); anything else (a transposed or broadcast grid, two grids on one dimension)
is reported as unsupported, never computed differently.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.affine import Affine
from .tensors import TensorView
from .values import UserError, norm_int


@dataclass(frozen=True)
class IndexGrid:
    """`start + step * arange(size)` placed on axis `axis` of a grid of rank `ndim`."""

    start: int | Affine
    step: int
    size: int
    axis: int = 0
    ndim: int = 1

    def shifted(self, offset) -> IndexGrid:
        return replace(self, start=_add(self.start, offset))

    def scaled(self, factor: int) -> IndexGrid:
        return replace(self, start=_mul(self.start, factor), step=self.step * factor)

    def placed(self, key: tuple) -> IndexGrid:
        """`grid[:, None]` / `grid[None, :]`: the grid's axis inside a grid of higher rank."""
        axes = [k for k in key if k is not None]
        if len(axes) != 1 or not isinstance(axes[0], slice) or axes[0] != slice(None):
            raise UserError(
                "err_unsupported_api",
                "an index grid can only be placed with ':' and None (e.g. nl.arange(n)[:, None])",
                hint="slice the tensor instead of the index grid",
            )
        if self.ndim != 1:
            raise UserError(
                "err_unsupported_api", "this index grid already has a place in a wider grid"
            )
        return replace(self, axis=key.index(axes[0]), ndim=len(key))


@dataclass(frozen=True)
class MGrid:
    """`nl.mgrid`: `nl.mgrid[0:128, 0:512]` is a tuple of grids, one per axis."""

    def __repr__(self) -> str:
        return "nl.mgrid"


class GridTuple(tuple):
    """The grids of one `nl.mgrid[...]`, also reachable as `.p` and `.x` (Beta 1 names)."""

    @property
    def p(self) -> IndexGrid:
        return self[0]

    @property
    def x(self) -> IndexGrid:
        return self[-1]


def mgrid(key) -> GridTuple:
    items = key if isinstance(key, tuple) else (key,)
    grids = []
    for axis, item in enumerate(items):
        if not isinstance(item, slice):
            raise UserError(
                "err_invalid_index", "nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]"
            )
        start = 0 if item.start is None else norm_int(item.start)
        step = 1 if item.step is None else norm_int(item.step)
        if not all(isinstance(v, int) for v in (start, item.stop, step)) or step <= 0:
            raise UserError(
                "err_invalid_index",
                "nl.mgrid bounds must be compile-time ints with a positive step",
            )
        size = max(0, -(-(item.stop - start) // step))
        grids.append(IndexGrid(start, step, size, axis, len(items)))
    return GridTuple(grids)


def arange(*args) -> IndexGrid:
    if len(args) == 1:
        start, stop = 0, args[0]
    elif len(args) == 2:
        start, stop = args
    else:
        raise UserError("err_invalid_argument", "nl.arange takes (stop) or (start, stop)")
    if not isinstance(start, int) or not isinstance(stop, int):
        raise UserError("err_invalid_argument", "nl.arange bounds must be compile-time ints")
    return IndexGrid(start, 1, max(0, stop - start))


def grid_binop(symbol: str, a, b):
    """`grid + c`, `c + grid`, `grid - c`, `grid * c`, `c * grid` for compile-time c; None for
    anything else (the caller reports it)."""
    if isinstance(a, IndexGrid) and isinstance(b, IndexGrid):
        return None
    grid, other, grid_left = (a, b, True) if isinstance(a, IndexGrid) else (b, a, False)
    if not isinstance(other, (int, Affine)) or isinstance(other, bool):
        return None
    if symbol == "+":
        return grid.shifted(other)
    if symbol == "-" and grid_left:
        return grid.shifted(_mul(other, -1))
    if symbol == "*" and isinstance(other, int):
        return grid.scaled(other)
    return None


def index_with_grids(view: TensorView, items: tuple) -> TensorView:
    """`view[items]` where items are ints, loop-variable expressions and index grids."""
    rank = len(view.pattern)
    if len(items) > rank:
        raise UserError(
            "err_invalid_index", f"too many indices for a tensor of rank {rank}: {len(items)} given"
        )
    if any(isinstance(k, slice) for k in items):
        raise UserError(
            "err_invalid_index",
            "a tensor index mixes slices (basic indexing) with nl.arange/nl.mgrid index grids "
            "(advanced indexing)",
            hint="index every dimension with a grid (nl.arange(n)[None, :]) or every one with a "
            "slice",
        )
    grids = [k for k in items if isinstance(k, IndexGrid)]
    axes = [g.axis for g in grids]
    if axes != sorted(axes) or len(set(axes)) != len(axes):
        raise UserError(
            "err_unsupported_api",
            "index grids that transpose or repeat an axis (e.g. t[i_f, i_p]) are not supported "
            "by nkic",
            hint="load the tile in its stored order and transpose it with nl.transpose",
        )
    # a grid of rank > 1 must match its position among the grids
    offset = view.offset
    pattern: list[tuple[int, int]] = []
    for dim, (item, (step, num)) in enumerate(zip(items, view.pattern)):
        if isinstance(item, IndexGrid):
            last = _add(item.start, item.step * (item.size - 1)) if item.size else item.start
            for bound in (item.start, last):
                if isinstance(bound, int) and not 0 <= bound < num:
                    raise UserError(
                        "err_tensor_access_out_of_bound",
                        f"index {bound} is out of bounds for dimension {dim} of size {num}",
                    )
            offset = offset + _mul(item.start, step)
            pattern.append((step * item.step, item.size))
        else:
            value = norm_int(item)
            if not isinstance(value, (int, Affine)) or isinstance(value, bool):
                raise UserError(
                    "err_invalid_index",
                    "a tensor index must be an int, a loop variable expression or an index grid",
                )
            if isinstance(value, int) and not 0 <= value < num:
                raise UserError(
                    "err_tensor_access_out_of_bound",
                    f"index {value} is out of bounds for dimension {dim} of size {num}",
                )
            offset = offset + _mul(value, step)
            if view.on_chip and dim == 0:
                pattern.append((step, 1))
    pattern += list(view.pattern[len(items) :])
    if view.on_chip and not pattern:
        pattern = [(view.pattern[0][0], 1)]
    return TensorView(view.tensor, offset, pattern, view.dtype)


def _add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return Affine.of(a) + Affine.of(b)


def _mul(a, k: int):
    if isinstance(a, int):
        return a * k
    return Affine.of(a) * k
