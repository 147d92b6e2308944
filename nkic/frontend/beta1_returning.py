"""Beta 1 `nki.isa` calls that return their result: `y = nisa.activation(nl.exp, x)`.

In Beta 1 an instruction called without `dst` allocates its result tile and returns it; the
optional `dtype=` gives the tile's dtype. Each returning instruction here has its Beta 1
positional order and a rule giving the result's shape, dtype and buffer from the operands;
the call is then bound as the NKI 0.3 instruction with that tile as `dst`. Three instructions
had other parameters in Beta 1 and are translated: `iota(expr, dtype)` and
`affine_select(pred, on_true_tile, on_false_value)` take an affine index-grid expression (the
0.3 `pattern`, `channel_multiplier` and `offset`), and `memset(shape, value, dtype)` allocates
the tile it fills.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.isa import INSTRUCTIONS
from . import nki_api
from .beta1_index import GridSum, IndexGrid
from .nl_lowering import new_tile
from .nl_math import promote
from .tensors import TensorView, type_name
from .values import IsaEnumMember, NlOp, UserError

F32 = "float32"


@dataclass(frozen=True)
class GridPredicate:
    """`iy < ix`: an affine expression of index grids (`expr`) compared with 0 by `op`, the
    Beta 1 predicate of `nisa.affine_select`."""

    op: str
    expr: GridSum

    is_mask = True


#: comparison node name -> (ALU operator of `expr <op> 0`)
_CMP = {"Lt": "less", "LtE": "less_equal", "Gt": "greater", "GtE": "greater_equal",
        "Eq": "equal", "NotEq": "not_equal"}  # fmt: skip


def grid_predicate(symbol: str, a, b) -> GridPredicate | None:
    """`a <symbol> b` for grid expressions a, b of the same rank, as `(a - b) <symbol> 0`;
    None when they are not both grid expressions or do not combine."""
    grids = (IndexGrid, GridSum)
    if symbol not in _CMP or not isinstance(a, grids) or not isinstance(b, grids):
        return None
    a, b = GridSum.of(a), GridSum.of(b).scaled(-1)
    if a.ndim != b.ndim:
        return None
    steps: dict[int, list[int]] = {}
    for step, size, axis in a.terms + b.terms:
        entry = steps.setdefault(axis, [0, size])
        if entry[1] != size:
            return None
        entry[0] += step
    start = a.start + b.start if isinstance(a.start, int) and isinstance(b.start, int) else None
    if start is None:
        return None
    terms = tuple((s, n, axis) for axis, (s, n) in sorted(steps.items()))
    return GridPredicate(_CMP[symbol], GridSum(start, terms, a.ndim))


def _affine(expr, what: str) -> tuple[tuple[int, ...], int, int, list[list[int]]]:
    """(shape, offset, channel_multiplier, free pattern) of an index-grid expression: the
    0.3 `iota` / `affine_select` form `offset + channel_multiplier * p + sum(step * f)`."""
    if isinstance(expr, IndexGrid):
        expr = GridSum.of(expr)
    if not isinstance(expr, GridSum):
        raise UserError(
            "err_invalid_argument",
            f"{what} takes an affine expression of nl.arange / nl.mgrid index grids, got "
            f"{type_name(expr)}",
            None,
            "e.g. nl.arange(128)[:, None] * 4 + nl.arange(512)[None, :]",
        )
    if not isinstance(expr.start, int):
        raise UserError(
            "err_unsupported_api",
            f"{what}: an index-grid expression offset by a loop variable is not supported by nkic",
            None,
            "add the loop-dependent offset to the result with nisa.tensor_scalar",
        )
    by_axis = {axis: (step, size) for step, size, axis in expr.terms}
    ndim = max(expr.ndim, 2)
    shape = tuple(by_axis.get(a, (0, 1))[1] for a in range(ndim))
    channel = by_axis.get(0, (0, 1))[0]
    pattern = [[by_axis.get(a, (0, 1))[0], shape[a]] for a in range(1, ndim)]
    return shape, expr.start, channel, pattern


def _tile(named: dict, key: str, name: str) -> TensorView:
    v = named.get(key)
    if not isinstance(v, TensorView):
        raise UserError(
            "err_invalid_argument", f"nisa.{name}: `{key}` must be a tile, got {type_name(v)}"
        )
    return v


def _like(key: str, *others: str):
    """The result has the shape of operand `key`, its dtype promoted with `others`' dtypes."""

    def rule(name, named):
        src = _tile(named, key, name)
        dtype = src.dtype
        for o in others:
            if isinstance(named.get(o), TensorView):
                dtype = promote(dtype, named[o].dtype)
        return src.shape, dtype, "sbuf"

    return rule


def _matmul(name, named):
    st, mv = _tile(named, "stationary", name), _tile(named, "moving", name)
    return (st.shape[-1], mv.shape[-1]), F32, "psum"


def _transpose(name, named):
    data = _tile(named, "data", name)
    if len(data.shape) != 2:
        raise UserError("err_invalid_argument", "nisa.nc_transpose takes a 2-D tile")
    engine = named.get("engine")
    on_vector = isinstance(engine, IsaEnumMember) and engine.name == "vector"
    return (data.shape[1], data.shape[0]), data.dtype, "sbuf" if on_vector else "psum"


def _reduce(name, named):
    data = _tile(named, "data", name)
    axis = named.get("axis")
    axes = axis if isinstance(axis, (list, tuple)) else (axis,)
    rank = len(data.shape)
    chosen = set()
    for a in axes:
        if not isinstance(a, int) or isinstance(a, bool) or not -rank < a < rank:
            raise UserError(
                "err_invalid_argument", f"nisa.tensor_reduce: axis {a!r} is not a free axis"
            )
        chosen.add(a % rank)
    keep = bool(named.get("keepdims"))
    shape = tuple(
        1 if d in chosen else n for d, n in enumerate(data.shape) if keep or d not in chosen
    )
    if len(shape) < 2:  # every free axis reduced: a column, as Beta 1 tiles keep a free axis
        shape = (data.shape[0], 1)
    return shape, data.dtype, "sbuf"


def _fixed(columns: int, dtype: str | None = None, key: str = "data"):
    def rule(name, named):
        data = _tile(named, key, name)
        return (data.shape[0], columns), dtype or data.dtype, "sbuf"

    return rule


def _partition_reduce(name, named):
    data = _tile(named, "data", name)
    return (1, *data.shape[1:]), data.dtype, "sbuf"


def _gather(name, named):
    src, index = _tile(named, "src_buffer", name), _tile(named, "index", name)
    per = named.get("num_elem_per_idx", 1)
    valid = named.get("num_valid_indices")
    per = per if isinstance(per, int) else 1
    n = 1
    for d in index.shape[1:]:
        n *= d
    if not isinstance(valid, int) or valid == n * 16:
        # every index of a core's 16 partitions, in the order the core reads them (down the
        # partitions first, as numpy's flatten(order="F")), each `per` elements long: the
        # shape Beta 1's documented example annotates, (128, 4, 16, 4) for a (128, 4) index
        return (src.shape[0], *index.shape[1:][::-1], 16, per), src.dtype, "sbuf"
    return (src.shape[0], valid, per), src.dtype, "sbuf"


def _sequence_bounds(name, named):
    ids = _tile(named, "segment_ids", name)
    return (ids.shape[0], 2, *ids.shape[1:]), ids.dtype, "sbuf"


def _nonzero(name, named):
    src = _tile(named, "src", name)
    return (src.shape[0], src.shape[-1] + 1), "int32", "sbuf"


def _dma_transpose(name, named):
    src = _tile(named, "src", name)
    axes = named.get("axes")
    if axes is None:
        axes = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(len(src.shape), ())
    if not isinstance(axes, (list, tuple)) or sorted(axes) != list(range(len(src.shape))):
        raise UserError("err_invalid_argument", f"nisa.dma_transpose: bad axes {axes!r}")
    return tuple(src.shape[a] for a in axes), src.dtype, "sbuf"


@dataclass(frozen=True)
class Returning:
    """A returning instruction: its Beta 1 positional parameters and result rule."""

    positional: tuple[str, ...]
    result: object  # (name, named operands) -> (shape, dtype, buffer)


def _catalogue_order(name: str) -> tuple[str, ...]:
    return tuple(p.name for p in INSTRUCTIONS[name].params if p.name not in ("dst", "name"))


_RULES = {
    "nc_matmul": _matmul,
    "nc_transpose": _transpose,
    "activation": _like("data"),
    "activation_reduce": _like("data"),
    "tensor_tensor": _like("data1", "data2"),
    "tensor_scalar": _like("data"),
    "scalar_tensor_tensor": _like("data", "operand1"),
    "tensor_scalar_reduce": _like("data"),
    "tensor_tensor_scan": _like("data0", "data1"),
    "tensor_copy": _like("src"),
    "reciprocal": _like("data"),
    "dropout": _like("data"),
    "exponential": _like("src"),
    "range_select": _like("on_true_tile"),
    "nc_match_replace8": _like("data"),
    "nc_n_gather": lambda name, named: (
        _tile(named, "indices", name).shape,
        _tile(named, "data", name).dtype,
        "sbuf",
    ),
    "tensor_reduce": _reduce,
    "tensor_partition_reduce": _partition_reduce,
    "bn_stats": _fixed(6),
    "bn_aggr": _fixed(2),
    "max8": _fixed(8, key="src"),
    "nc_find_index8": _fixed(8, "uint32"),
    "local_gather": _gather,
    "sequence_bounds": _sequence_bounds,
    "nonzero_with_count": _nonzero,
    "dma_transpose": _dma_transpose,
}

RETURNING: dict[str, Returning] = {
    name: Returning(_catalogue_order(name), rule) for name, rule in _RULES.items()
}
#: the three whose Beta 1 parameters differ from NKI 0.3's (translated by `call`)
RETURNING["iota"] = Returning(("expr", "dtype"), None)
RETURNING["memset"] = Returning(("shape", "value", "dtype", "engine"), None)
RETURNING["affine_select"] = Returning(("pred", "on_true_tile", "on_false_value"), None)


def bind_arguments(name: str, args: list, kwargs: dict) -> dict:
    """The call's arguments by parameter name (Beta 1 positional order)."""
    order = RETURNING[name].positional
    if len(args) > len(order):
        raise UserError(
            "err_type_error",
            f"nisa.{name}() takes at most {len(order)} positional arguments (Beta 1, without "
            f"dst) but {len(args)} were given",
        )
    named = dict(zip(order, args))
    for k, v in kwargs.items():
        if k in named:
            raise UserError("err_type_error", f"nisa.{name}() got multiple values for {k!r}")
        named[k] = v
    return named


def call(ip, name: str, args: list, kwargs: dict, node) -> TensorView:
    """Emit the Beta 1 call `nisa.<name>(...)` without `dst`; the new result tile."""
    named = bind_arguments(name, args, kwargs)
    dtype = named.pop("dtype", None)
    buffer = "sbuf"
    if name == "iota":
        shape, out, named = _iota(named, dtype)
    elif name == "memset":
        shape, out, named = _memset(ip, named, dtype)
    elif name == "affine_select":
        shape, out, named = _affine_select(named)
    else:
        shape, out, buffer = RETURNING[name].result(name, named)
    if dtype is not None:
        out = nki_api.dtype_arg(dtype)
    dst = new_tile(ip, node, shape, out, buffer)
    nki_api.bind_isa(ip, name, [], {"dst": dst, **named}, node)
    return dst


def _iota(named: dict, dtype):
    if dtype is None:
        raise UserError("err_missing_argument", "nisa.iota() missing required argument: 'dtype'")
    unknown = set(named) - {"expr"}
    if unknown:
        raise UserError(
            "err_unexpected_keyword",
            f"nisa.iota() got an unexpected keyword argument '{sorted(unknown)[0]}'",
            None,
            "Beta 1 nisa.iota takes (expr, dtype)",
        )
    shape, offset, channel, pattern = _affine(named.get("expr"), "nisa.iota")
    return shape, None, {"pattern": pattern, "offset": offset, "channel_multiplier": channel}


def _memset(ip, named: dict, dtype):
    if dtype is None or "shape" not in named or "value" not in named:
        raise UserError(
            "err_missing_argument",
            "nisa.memset() needs shape, value and dtype (Beta 1: memset(shape, value, dtype))",
        )
    shape = named.pop("shape")
    if not isinstance(shape, (list, tuple)):
        raise UserError("err_invalid_argument", "nisa.memset: `shape` must be a tuple of ints")
    shape = tuple(ip.need_int(n, "a dimension of the memset shape") for n in shape)
    return shape, None, named


def _affine_select(named: dict):
    pred = named.pop("pred", None)
    if not isinstance(pred, GridPredicate):
        raise UserError(
            "err_invalid_argument",
            "nisa.affine_select: `pred` must compare two index-grid expressions (e.g. iy < ix)",
            None,
            "build the predicate from nl.arange / nl.mgrid grids",
        )
    on_true = _tile(named, "on_true_tile", "affine_select")
    shape, offset, channel, pattern = _affine(pred.expr, "nisa.affine_select")
    if len(shape) != len(on_true.shape) or any(
        n not in (1, m) for n, m in zip(shape, on_true.shape)
    ):
        raise UserError(
            "err_invalid_argument",
            f"nisa.affine_select: the predicate's grid {list(shape)} does not match the tile "
            f"{list(on_true.shape)}",
        )
    free = [[step, n] for (step, _), n in zip(pattern, on_true.shape[1:])]
    named.update(pattern=free, offset=offset, channel_multiplier=channel, cmp_op=NlOp(pred.op))
    return on_true.shape, on_true.dtype, named
