"""Beta 1 `mask=`: an operation restricted to the grid points where a predicate holds.

The predicates nkic accepts compare an affine index-grid expression with a compile-time bound
(`i * 128 + i_p < N`, `i_f >= 16`), or are the `&` of such comparisons. Each keeps a contiguous
range of every grid axis it constrains, so a masked operation is the same operation on the
sub-tile those ranges select: every tile operand is sliced to them (a dimension of size 1 is
broadcast and stays whole), and an index-grid subscript of an HBM tensor gets its grids
shortened before the tensor is indexed, so the tail tile of a loop never reads or writes past
the tensor's end. A value-returning call gives a tile of the kept shape; a later masked call
that uses it with the same ranges finds its elements where they are (each restricted tile
remembers the grid position of its first element).

The ranges must be known at specialisation: a predicate that depends on the variable of a
symbolic loop and is not true in every iteration makes that loop unroll (as any value Python
needs concretely does). Anything else given as `mask=` is a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.affine import Affine
from .beta1_index import GridSum, IndexGrid, index_with_grids
from .tensors import TensorView, type_name
from .values import UserError, is_symbolic, norm_int

#: Comparison node names -> the operator, and the operator with its sides swapped.
COMPARISONS = {"Lt": ("<", ">"), "LtE": ("<=", ">="), "Gt": (">", "<"), "GtE": (">=", "<=")}

_HOLDS = {
    "<": lambda v, b: v < b,
    "<=": lambda v, b: v <= b,
    ">": lambda v, b: v > b,
    ">=": lambda v, b: v >= b,
}

#: Calls whose mask nkic does not turn into a sub-tile (their operands' dimensions are not the
#: iteration grid's).
NOT_MASKABLE = {"nc_matmul", "nc_transpose", "matmul", "transpose"}

#: Instructions whose iteration space is one operand's (the others are per-partition
#: vectors of their own shape, e.g. the 8 values of `nc_match_replace8`): the mask restricts
#: only the named operands.
ITERATION_OPERANDS = {
    "nc_match_replace8": ("data",),
    "nc_find_index8": ("data",),
    "max8": ("src",),
}

UNSUPPORTED_HINT = (
    "write the mask as comparisons of an index grid expression with a compile-time bound, "
    "joined with & (mask=(i * 128 + i_p < N)), or slice the operands to the rows and "
    "columns the mask keeps"
)


@dataclass(frozen=True)
class Predicate:
    """`grid <op> bound`: grid values `grid.start + grid.step * k` compared with `bound`."""

    grid: IndexGrid
    op: str
    bound: int | Affine


@dataclass(frozen=True)
class Mask:
    """The `&` of predicates."""

    predicates: tuple[Predicate, ...]

    is_mask = True

    def __bool__(self) -> bool:
        raise UserError(
            "err_ambiguous_tensor_truth_value",
            "a mask predicate has no truth value at specialisation time",
            None,
            "pass it as mask= of an nl / nisa call",
        )


@dataclass
class OutOfBounds:
    """An index-grid subscript that leaves the tensor: an error, unless a mask= of the call it
    is passed to keeps only the part inside (the tail tile of a loop)."""

    view: TensorView
    items: tuple
    error: UserError


def is_index_value(v) -> bool:
    """Whether `v` is a Beta 1 index object (a grid, an affine expression of grids, or a mask
    predicate on them): it stands for many values at once, so it has no truth value."""
    return isinstance(v, IndexGrid | GridSum | Mask)


def compare(symbol: str, a, b) -> Mask | None:
    """`grid < bound` (or `bound > grid`, ...) as a Mask; None when it is not one."""
    ops = COMPARISONS.get(symbol)
    if ops is None:
        return None
    if isinstance(a, IndexGrid) and _bound(b):
        return Mask((Predicate(a, ops[0], norm_int(b)),))
    if isinstance(b, IndexGrid) and _bound(a):
        return Mask((Predicate(b, ops[1], norm_int(a)),))
    return None


def conjunction(a, b) -> Mask | None:
    if isinstance(a, Mask) and isinstance(b, Mask):
        return Mask(a.predicates + b.predicates)
    return None


def _bound(v) -> bool:
    return isinstance(v, (int, Affine)) and not isinstance(v, bool)


def ranges(ip, mask: Mask) -> dict[int, tuple[int, int]]:
    """The kept range [lo, hi) of every grid axis the mask constrains."""
    kept: dict[int, tuple[int, int]] = {}
    ndims = {p.grid.ndim for p in mask.predicates}
    if len(ndims) > 1:
        raise UserError(
            "err_unsupported_api",
            "a mask combines index grids of different ranks",
            None,
            UNSUPPORTED_HINT,
        )
    for p in mask.predicates:
        g = p.grid
        lo, hi = _kept(ip, p)
        if g.axis in kept:
            lo, hi = max(lo, kept[g.axis][0]), min(hi, kept[g.axis][1])
        kept[g.axis] = (lo, max(lo, hi))
    return kept


def _kept(ip, p: Predicate) -> tuple[int, int]:
    """The range of grid positions k where the predicate holds."""
    g = p.grid
    diff = norm_int(Affine.of(p.bound) - Affine.of(g.start))  # compare step * k with diff
    holds = _HOLDS[p.op]
    if is_symbolic(diff):
        bounds = ip.affine_bounds(diff)
        if bounds is not None and all(
            holds(g.step * k, d) for d in bounds for k in (0, max(g.size - 1, 0))
        ):
            return 0, g.size  # true in every iteration: no restriction
        diff = ip.need_concrete(diff, "a mask bound")  # unrolls the loop
    keep = [k for k in range(g.size) if holds(g.step * k, diff)]
    if not keep:
        return 0, 0
    return keep[0], keep[-1] + 1


def restrict(ip, fn_name: str, args: list, kwargs: dict, mask) -> tuple[list, dict] | None:
    """The call's arguments restricted to what `mask` keeps; None when it keeps nothing."""
    if not isinstance(mask, Mask):
        raise UserError(
            "err_unsupported_api",
            f"this mask= is not supported by nkic (a {type_name(mask)})",
            None,
            UNSUPPORTED_HINT,
        )
    if fn_name in NOT_MASKABLE:
        raise UserError(
            "err_unsupported_api",
            f"mask= on {fn_name} is not supported by nkic",
            None,
            "slice the operands to the rows and columns the mask keeps",
        )
    kept = ranges(ip, mask)
    if any(lo >= hi for lo, hi in kept.values()):
        return None
    ndim = mask.predicates[0].grid.ndim
    origins = _origins(ip)

    def one(v):
        if isinstance(v, OutOfBounds):
            return _subscript(v, kept)
        if isinstance(v, TensorView) and len(v.shape) == ndim:
            return _slice(v, kept, origins.get(id(v.tensor)))
        return v

    masked = ITERATION_OPERANDS.get(fn_name)
    if masked is None:
        return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}
    from .beta1_returning import RETURNING

    order = RETURNING[fn_name].positional
    return (
        [one(a) if i < len(order) and order[i] in masked else a for i, a in enumerate(args)],
        {k: one(v) if k in masked else v for k, v in kwargs.items()},
    )


def _subscript(v: OutOfBounds, kept: dict[int, tuple[int, int]]) -> TensorView:
    items = []
    for item in v.items:
        if isinstance(item, IndexGrid) and item.axis in kept:
            lo, hi = kept[item.axis]
            lo, hi = min(lo, item.size), min(hi, item.size)
            item = IndexGrid(_add(item.start, item.step * lo), item.step, hi - lo, item.axis,
                             item.ndim)  # fmt: skip
        elif isinstance(item, GridSum) and any(axis in kept for _, _, axis in item.terms):
            start, terms = item.start, []
            for step, size, axis in item.terms:
                lo, hi = kept.get(axis, (0, size))
                lo, hi = min(lo, size), min(hi, size)
                start = _add(start, step * lo)
                terms.append((step, hi - lo, axis))
            item = GridSum(start, tuple(terms), item.ndim)
        items.append(item)
    return index_with_grids(v.view, tuple(items))


def _slice(view: TensorView, kept, origin) -> TensorView:
    for axis, (lo, hi) in sorted(kept.items()):
        size = view.shape[axis]
        if size == 1:
            continue  # broadcast along this axis
        start = origin[axis] if origin is not None else 0
        if lo < start or hi - start > size:
            raise UserError(
                "err_shape_mismatch",
                f"the mask keeps grid positions {lo}..{hi - 1} of axis {axis}, outside this "
                f"operand (positions {start}..{start + size - 1})",
                None,
                "give the operands the shape of the index grid the mask is written on",
            )
        if (lo - start, hi - start) != (0, size):
            view = view.slice_dim(axis, lo - start, hi - start)
    return view


def mark_result(ip, result, kept: dict[int, tuple[int, int]], ndim: int) -> None:
    """Remember where in the grid a restricted result tile starts."""
    if isinstance(result, TensorView) and len(result.shape) == ndim:
        origin = tuple(kept.get(a, (0, 0))[0] for a in range(ndim))
        if any(origin):
            _origins(ip)[id(result.tensor)] = origin


def _origins(ip) -> dict:
    found = getattr(ip, "_beta1_mask_origins", None)
    if found is None:
        found = ip._beta1_mask_origins = {}
    return found


def _add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return norm_int(Affine.of(a) + Affine.of(b))
