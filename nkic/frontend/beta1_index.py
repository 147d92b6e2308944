"""Beta 1 index grids: `nl.arange` and `nl.mgrid` values and the tensor views they select.

In Beta 1 a tensor is indexed with affine expressions of index grids: `nl.arange(128)[:, None]`
varies along the first axis of a two-dimensional grid, `nl.arange(512)[None, :]` along the
second, and `t[i * 128 + i_p, i_f]` selects rows `i*128 .. i*128+127` and every column. Each
grid is `start + step * k` for `k` in `0 .. size-1` along one axis; adding a compile-time value
(an int or a loop variable) moves `start`, multiplying scales both. Indexing a tensor with grids
whose axes follow the tensor's dimensions in order is an ordinary strided view (what NKI 0.2+
writes as slices). Grids of different axes added into one index (`t[i_p, rows * i_c + i_r]`, a
`GridSum`) split that tensor dimension into one view dimension per grid axis.

Grids in any other order follow numpy's advanced indexing (`_grid_space_view`): the view has
the grid's shape, each grid axis moving by the sum of the strides of the tensor dimensions
whose index uses it. So `t[i_f, i_p]` reads the transpose, `t[i_p, i_j, i_j]` a diagonal, and
an axis no index uses is a dimension of size 1 with stride 0 (a broadcast read).
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
    """The grids of one `nl.mgrid[...]`, also reachable by their Beta 1 axis names: `.p` (the
    partition axis), then `.x`, `.y`, `.z`."""

    AXES = ("p", "x", "y", "z")

    def axis(self, name: str) -> IndexGrid | None:
        index = self.AXES.index(name)
        return self[index] if index < len(self) else None


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


def check_grid_ranks(items: tuple) -> None:
    """A tensor index grid has a dimension per axis of the tile it selects (at least two: the
    partition dimension and the free ones): a bare `nl.arange(n)`, one-dimensional, is
    `err_1d_arange_not_supported`, as in Beta 1."""
    for item in items:
        if isinstance(item, (IndexGrid, GridSum)) and item.ndim == 1:
            raise UserError(
                "err_1d_arange_not_supported",
                "a tensor is indexed with a one-dimensional nl.arange; index grids place their "
                "axis in a grid of the tile's rank",
                hint="write nl.arange(n)[:, None] for the partition dimension, "
                "nl.arange(n)[None, :] for a free one, or slice the tensor (t[0:n, 0])",
            )


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


@dataclass(frozen=True)
class GridSum:
    """`start + sum(step * arange(size) on axis)`: grids of different axes added
    (`pool * i1 + i2`), which index one tensor dimension with several grid axes."""

    start: int | Affine
    terms: tuple[tuple[int, int, int], ...]  # (step, size, axis), sorted by axis
    ndim: int

    @staticmethod
    def of(g) -> GridSum:
        if isinstance(g, GridSum):
            return g
        return GridSum(g.start, ((g.step, g.size, g.axis),), g.ndim)

    def shifted(self, offset) -> GridSum:
        return replace(self, start=_add(self.start, offset))

    def scaled(self, factor: int) -> GridSum:
        terms = tuple((step * factor, size, axis) for step, size, axis in self.terms)
        return replace(self, start=_mul(self.start, factor), terms=terms)

    def last(self):
        return _add(self.start, sum(step * (size - 1) for step, size, _ in self.terms if size))


def _sum(a, b) -> GridSum | IndexGrid | None:
    """The sum of two grid expressions; terms on one axis add their steps (`i + i` is
    `2 * i`)."""
    a, b = GridSum.of(a), GridSum.of(b)
    if a.ndim != b.ndim:
        return None
    merged: dict[int, tuple[int, int]] = {}
    for step, size, axis in a.terms + b.terms:
        if axis in merged:
            if merged[axis][1] != size:
                return None
            step += merged[axis][0]
        merged[axis] = (step, size)
    terms = tuple((step, size, axis) for axis, (step, size) in sorted(merged.items()))
    start = _add(a.start, b.start)
    if len(terms) == 1:
        return IndexGrid(start, terms[0][0], terms[0][1], terms[0][2], a.ndim)
    return GridSum(start, terms, a.ndim)


def grid_binop(symbol: str, a, b):
    """`grid + c`, `c + grid`, `grid - c`, `grid * c`, `c * grid` for compile-time c, and
    `grid + grid` of different axes; None for anything else (the caller reports it)."""
    grids = (IndexGrid, GridSum)
    if isinstance(a, grids) and isinstance(b, grids):
        return _sum(a, b) if symbol == "+" else None
    grid, other, grid_left = (a, b, True) if isinstance(a, grids) else (b, a, False)
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
    if _whole_grid(view, items, rank):
        return TensorView(view.tensor, view.offset, view.pattern, view.dtype)
    if len(items) > rank:
        raise UserError(
            "err_invalid_index", f"too many indices for a tensor of rank {rank}: {len(items)} given"
        )
    if any(isinstance(k, slice) for k in items):
        raise UserError(
            "err_unsupported_mixing_basic_advanced_tensor_indexing",
            "a tensor index mixes slices (basic indexing) with nl.arange/nl.mgrid index grids "
            "(advanced indexing)",
            hint="index every dimension with a grid (nl.arange(n)[None, :]) or every one with a "
            "slice",
        )
    axes = [
        a
        for k in items
        if isinstance(k, (IndexGrid, GridSum))
        for a in ([k.axis] if isinstance(k, IndexGrid) else [t[2] for t in k.terms])
    ]
    if axes != sorted(axes) or len(set(axes)) != len(axes) or _broadcasts(items, rank):
        return _grid_space_view(view, items)
    # grids placed at their own positions (`t[0, i_f]` with i_f = nl.arange(n)[None, :]): the
    # view has the grid's rank, an int giving a dimension of size 1
    placed = all(
        k.ndim == len(items) and k.axis == d
        for d, k in enumerate(items)
        if isinstance(k, IndexGrid)
    ) and any(isinstance(k, IndexGrid) for k in items)
    # a grid of rank > 1 must match its position among the grids
    offset = view.offset
    pattern: list[tuple[int, int]] = []
    for dim, (item, (step, num)) in enumerate(zip(items, view.pattern)):
        if isinstance(item, GridSum):
            if view.on_chip and dim == 0 and len(item.terms) > 1:
                raise UserError(
                    "err_unsupported_api",
                    "a sum of index grids on the partition dimension is not supported by nkic",
                    hint="index the partition dimension with one grid",
                )
            _check_bounds(item, dim, num)
            offset = offset + _mul(item.start, step)
            pattern += [(step * t_step, size) for t_step, size, _ in item.terms]
        elif isinstance(item, IndexGrid):
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
                raise _bad_index(value, dim)
            if isinstance(value, int) and not 0 <= value < num:
                raise UserError(
                    "err_tensor_access_out_of_bound",
                    f"index {value} is out of bounds for dimension {dim} of size {num}",
                )
            offset = offset + _mul(value, step)
            if (view.on_chip and dim == 0) or placed:
                pattern.append((step, 1))  # the grid's axis `dim` has size 1 here
    pattern += list(view.pattern[len(items) :])
    if view.on_chip and not pattern:
        pattern = [(view.pattern[0][0], 1)]
    return TensorView(view.tensor, offset, pattern, view.dtype)


def _bad_index(item, dim: int) -> UserError:
    if isinstance(item, TensorView):  # a tile of runtime indices (dim 0 is `indirect`)
        return UserError(
            "err_indirect_indices_free_dim",
            f"dimension {dim} is indexed with a tile of runtime indices; a load or store takes "
            "runtime indices on the partition (first) dimension only",
            hint="index the first dimension with the index tile (t[idx[i_p, 0], i_f]), "
            "transposing the tensor if its rows are what the indices select",
        )
    return UserError(
        "err_invalid_index",
        "a tensor index must be an int, a loop variable expression or an index grid",
    )


def _whole_grid(view: TensorView, items: tuple, rank: int) -> bool:
    """Whether `items` is the grid of the whole view, each axis in its own place (`t[i_p, i_f]`
    with `i_p, i_f = nl.mgrid[0:P, 0:F]` for a (P, F) view): the view itself, the most common
    subscript of a Beta 1 kernel, taken without the general walk."""
    if len(items) != rank:
        return False
    for d, (item, (_, num)) in enumerate(zip(items, view.pattern)):
        if (
            type(item) is not IndexGrid
            or item.start != 0
            or item.step != 1
            or item.size != num
            or item.axis != d
            or item.ndim != rank
        ):
            return False
    return True


def _terms(item) -> tuple[tuple[int, int, int], ...]:
    """(step, size, axis) of every grid axis in an index item; () for an int."""
    if isinstance(item, IndexGrid):
        return ((item.step, item.size, item.axis),)
    if isinstance(item, GridSum):
        return item.terms
    return ()


def _check_bounds(item, dim: int, num: int) -> None:
    """The smallest and the largest index `item` takes must lie in `0 .. num-1` (when known at
    compile time; a loop variable's range is checked where the loop is known)."""
    start = item.start if isinstance(item, (IndexGrid, GridSum)) else item
    if not isinstance(start, int):
        return
    spans = [step * (size - 1) for step, size, _ in _terms(item) if size]
    for bound in (start + sum(min(0, s) for s in spans), start + sum(max(0, s) for s in spans)):
        if not 0 <= bound < num:
            raise UserError(
                "err_tensor_access_out_of_bound",
                f"index {bound} is out of bounds for dimension {dim} of size {num}",
            )


def _broadcasts(items: tuple, rank: int) -> bool:
    """Whether grids index every dimension and leave an axis of their grid unused (`t[i_p,
    i_w]` with `i_p, i_x, i_w = nl.mgrid[...]`): a read broadcast along that axis."""
    if len(items) != rank or not all(isinstance(k, (IndexGrid, GridSum)) for k in items):
        return False
    used = {axis for k in items for _, _, axis in _terms(k)}
    ndims = {k.ndim for k in items}
    return len(ndims) == 1 and len(used) < ndims.pop()


def _grid_space_view(view: TensorView, items: tuple) -> TensorView:
    """`view[items]` with grids in any order: the view has the shape of the index grid (one
    dimension per grid axis, as numpy's advanced indexing broadcasts the index arrays), and
    each grid axis moves through the tensor by the sum of the strides of the dimensions whose
    index uses it. A transposed grid (`t[i_f, i_p]`) swaps strides, an axis used by two
    dimensions (`t[i_p, i_p]`) walks both at once, and an axis no index uses is a dimension of
    size 1."""
    grids = [k for k in items if isinstance(k, (IndexGrid, GridSum))]
    ndim = grids[0].ndim
    if any(k.ndim != ndim for k in grids):
        raise UserError(
            "err_unsupported_api",
            "the index grids of one subscript have different ranks; nkic supports grids of one "
            "nl.mgrid (or nl.arange grids placed in a grid of one rank) here",
            hint="build every index of the subscript from one nl.mgrid[...]",
        )
    strides = [0] * ndim
    sizes: list[int | None] = [None] * ndim
    offset = view.offset
    uses: dict[int, set[int]] = {}
    for dim, (item, (step, num)) in enumerate(zip(items, view.pattern)):
        if not isinstance(item, (IndexGrid, GridSum)):
            item = norm_int(item)
            if not isinstance(item, (int, Affine)) or isinstance(item, bool):
                raise _bad_index(item, dim)
        _check_bounds(item, dim, num)
        start = item.start if isinstance(item, (IndexGrid, GridSum)) else item
        offset = offset + _mul(start, step)
        for t_step, size, axis in _terms(item):
            if sizes[axis] not in (None, size):
                raise UserError(
                    "err_shape_mismatch",
                    f"axis {axis} of the index grid has size {sizes[axis]} in one index and "
                    f"{size} in another",
                    hint="build the indices from one nl.mgrid[...]",
                )
            sizes[axis] = size
            strides[axis] += step * t_step
            uses.setdefault(axis, set()).add(dim)
    if len(items) < len(view.pattern):
        raise UserError(
            "err_unsupported_api",
            "index grids in a transposed or repeated order must index every dimension of the "
            "tensor in nkic",
            hint="add the missing dimensions' grids to the subscript",
        )
    if view.on_chip and (uses.get(0, {0}) != {0} or any(0 in d for a, d in uses.items() if a)):
        raise UserError(
            "err_unsupported_api",
            "on an SBUF or PSUM tile the partition dimension is indexed by the first grid axis "
            "and only by it: an engine reads one partition per element of that axis",
            hint="load the tile in its stored order and transpose it with nisa.nc_transpose, or "
            "index the HBM tensor with the transposed grid in nl.load",
        )
    pattern = [
        (strides[a] if sizes[a] is not None else (step0 if a == 0 else 0), sizes[a] or 1)
        for a, step0 in ((a, view.pattern[0][0]) for a in range(ndim))
    ]
    return TensorView(view.tensor, offset, pattern, view.dtype)


def _add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return Affine.of(a) + Affine.of(b)


def _mul(a, k: int):
    if isinstance(a, int):
        return a * k
    return Affine.of(a) * k


def indirect(view: TensorView, items: tuple) -> TensorView:
    """`t[idx_tile, i_f]`: the rows of HBM tensor `t` that an SBUF tile of row indices names
    (an indirect DMA; current NKI's `.ap(vector_offset=idx_tile)`), the other dimensions
    indexed as usual. Only DMA operands (`nl.load`, `nl.store`, `nisa.dma_copy`) take it."""
    index = items[0]
    if view.on_chip:
        raise UserError(
            "err_unsupported_api",
            "a tile of indices selects rows of an HBM tensor only (an indirect DMA)",
            hint="gather on-chip with nisa.nc_n_gather or nl.gather_flattened",
        )
    rows = index.shape[0]
    if index.buffer != "sbuf" or index.dtype not in ("int32", "uint32") or index.shape != (rows, 1):
        raise UserError(
            "err_invalid_argument",
            f"an index tile must be an int32/uint32 SBUF tile of shape (rows, 1), got "
            f"{index.dtype} {index.buffer} {index.shape}",
            hint="load or compute the row indices into an int32 column tile",
        )
    rest = items[1:]
    ndim = max([k.ndim for k in rest if isinstance(k, (IndexGrid, GridSum))] + [2])
    # the rows are read at run time (a row outside the tensor is a run-time fault): the view is
    # built on row 0 and then given one entry per index, however many rows the tensor has
    base = index_with_grids(view, (IndexGrid(0, 1, 1, 0, ndim), *rest))
    pattern = ((base.pattern[0][0], rows), *base.pattern[1:])
    return TensorView(base.tensor, base.offset, pattern, base.dtype, ("vector", index, 0, None))
