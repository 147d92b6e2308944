"""Beta 1 `mask=`: an operation restricted to the grid points where a predicate holds.

The predicates nkic accepts compare an affine index-grid expression with a compile-time bound
(`i * 128 + i_p < N`, `i_f >= 16`), or are the `&` of such comparisons. Each keeps a contiguous
range of every grid axis it constrains, so a masked operation is the same operation on the
sub-tile those ranges select: every tile operand is sliced to them (a dimension of size 1 is
broadcast and stays whole), and an index-grid subscript of an HBM tensor gets its grids
shortened before the tensor is indexed, so the tail tile of a loop never reads or writes past
the tensor's end. A value-returning call gives, as in Beta 1, a tile of the whole grid's shape
of which the call writes the kept part only (`widen`); the rest holds whatever the memory held,
which the dataflow checks report when it is read. A result not laid out on the grid keeps the
kept shape and remembers the grid position of its first element.

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


# A masked call that returns a tile ----------------------------------------------------------

#: Reductions: their `axis` (the grid axes they remove) is the argument after the tile.
REDUCTIONS = {"sum", "max", "min", "prod", "mean", "all", "tensor_reduce"}

#: Results whose free dimensions are not the grid's (8 values per partition, statistics):
#: only their partition dimension is the grid's first axis.
PARTITION_ONLY = {"max8", "nc_find_index8", "bn_stats", "bn_aggr"}

#: Results not laid out on the iteration grid at all.
NOT_ON_GRID = {"tensor_partition_reduce", "nc_n_gather", "local_gather", "sequence_bounds",
               "nonzero_with_count", "dma_transpose"}  # fmt: skip


@dataclass
class Widened:
    """A masked call's result tile of the whole grid's shape (`tile`), written only where the
    mask holds: by the operands `writers` name, through the views `window` selects. An
    assignment `t[...] = call(..., mask=m)` moves those writes into `t`."""

    tile: TensorView
    writers: list[tuple[object, str]]
    window: tuple[tuple[int, int, int], ...]  # (axis, lo, hi) of the kept part
    node: object


def widen(ip, fn, name: str, args, kwargs, mask: Mask, kept, result, block, start, call):
    """`result` (the call on the kept sub-tiles) as a tile of the whole index grid's shape:
    Beta 1 returns the grid's shape and writes only the masked-in elements, so the rest holds
    whatever the memory held. None when the result is not laid out on the grid (it then
    keeps the kept shape, its position in the grid remembered by `mark_result`)."""
    from ..ir.core import Alloc, Inst
    from .values import IsaInstr

    if not isinstance(result, TensorView) or not result.on_chip or ip.builder.block is not block:
        return None
    axes = _result_axes(fn, name, args, kwargs, len(result.shape), mask)
    if axes is None:
        return None
    sizes = {p.grid.axis: p.grid.size for p in mask.predicates}
    shape, window = list(result.shape), []
    for r, g in enumerate(axes):
        if g is None or g not in kept:
            continue
        lo, hi = kept[g]
        if result.shape[r] != hi - lo or hi - lo == sizes[g]:
            continue  # a broadcast dimension, or the mask keeps the whole axis
        shape[r] = sizes[g]
        window.append((r, lo, hi))
    if not window:
        return None
    whole = TensorView.whole(result.tensor).to_ap()
    ops = block[start:]
    alloc_at = next(
        (i for i, op in enumerate(ops) if isinstance(op, Alloc) and op.result is result.tensor),
        None,
    )
    if alloc_at is None or result.to_ap() != whole:
        return None  # not a tile of the call's own
    writers = []
    for op in ops:
        if not isinstance(op, (Alloc, Inst)):
            writers = None  # a loop or a branch: copied below
            break
        if isinstance(op, Inst):
            for key, ap in op.aps():
                if ap.tensor is result.tensor:
                    if ap != whole:
                        writers = None
                        break
                    writers.append((op, key))
            if writers is None:
                break
    label = result.tensor.label or (fn.name if isinstance(fn, IsaInstr) else "")
    full = ip.alloc(tuple(shape), result.dtype, result.buffer, label, None, call)
    view = _window(full, window)
    if writers is None:
        from .nl_lowering import emit

        emit(ip, call, "tensor_copy", dst=view, src=result)
    else:
        block.pop()  # the full tile's allocation takes the place of the call's own
        block[start + alloc_at] = Alloc(full.tensor, block[start + alloc_at].loc)
        for inst, key in writers:
            inst.operands[key] = view.to_ap()
        ip._beta1_widened = Widened(full, writers, tuple(window), call.node)
    for attr in ("_beta1_fresh", "_beta1_matmul"):
        pending = getattr(ip, attr, None)
        if pending is not None and pending[0] is result:
            setattr(ip, attr, None)
    return full


def _window(view: TensorView, window) -> TensorView:
    for axis, lo, hi in window:
        view = view.slice_dim(axis, lo, hi)
    return view


def _result_axes(fn, name: str, args, kwargs, rank: int, mask: Mask):
    """The grid axis of each dimension of the result (None: not a grid axis), or None when
    the result is not laid out on the grid."""
    from .values import IsaInstr

    ndim = mask.predicates[0].grid.ndim
    if name in NOT_ON_GRID or name in NOT_MASKABLE:
        return None
    if name in PARTITION_ONLY:
        return [0] + [None] * (rank - 1)
    removed: set[int] = set()
    if name in REDUCTIONS:
        if isinstance(fn, IsaInstr):
            from .beta1_returning import bind_arguments

            axis = bind_arguments(name, list(args), dict(kwargs)).get("axis")
        else:
            axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
        items = axis if isinstance(axis, (list, tuple)) else (axis,)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
            return None
        removed = {a % ndim for a in items}
    if rank == ndim:
        return [None if a in removed else a for a in range(ndim)]
    remaining = [a for a in range(ndim) if a not in removed]
    if rank == len(remaining):
        return remaining
    if len(remaining) == 1 and rank == 2:
        return [remaining[0], None]  # a tile stays at least 2-D
    return None


def write_widened(ip, dst: TensorView, value) -> bool:
    """`t[...] = nl.exp(x, mask=m)`: the masked call writes its kept elements into `t`
    itself, leaving the rest of `t` as it was (as Beta 1 compiled it), rather than a whole
    tile of its own, partly unwritten, copied into `t`. Only when the tile is the call's
    fresh result, the call is the assignment's whole right-hand side, `t` has its shape,
    buffer and dtype, and the call does not read `t`."""
    from ..ir.core import Alloc

    w = getattr(ip, "_beta1_widened", None)
    if w is None or value is not w.tile:
        return False
    ip._beta1_widened = None
    if getattr(ip, "assigned_expr", None) is not w.node:
        return False
    if (dst.buffer, dst.shape, dst.dtype) != (value.buffer, value.shape, value.dtype):
        return False
    if dst.dynamic is not None or not dst.on_chip:
        return False
    insts = {id(inst): inst for inst, _ in w.writers}
    if any(ap.tensor is dst.tensor for inst in insts.values() for _, ap in inst.aps()):
        return False
    target = _window(dst, w.window).to_ap()
    for inst, key in w.writers:
        inst.operands[key] = target
    block = ip.builder.block
    block[:] = [op for op in block if not (isinstance(op, Alloc) and op.result is value.tensor)]
    return True
