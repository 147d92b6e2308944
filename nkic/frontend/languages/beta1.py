"""The Beta 1 dialect (`neuronxcc.nki`, NKI 0.1, Neuron SDK up to 2.27): a layer over the NKI
0.3 tables. A file is Beta 1 when it imports `neuronxcc.nki` (or a submodule).

What differs from 0.3 and is implemented here:
* the module names (`neuronxcc.nki`, `.language`, `.isa`, `.typing`);
* `nl.arange` / `nl.mgrid` index grids and affine index expressions (`t[i * 128 + i_p, i_f]`),
  lowered to the equivalent strided views (`beta1_index.py`);
* operators on tiles (`a + b`, `a * 2.0`, `acc += x`) as the `nl` function of the operator;
* `nki.isa` instructions called without `dst` return a new tile (`nisa.nc_matmul(x, y)`,
  `nisa.activation(op, data)`, `nisa.tensor_tensor(a, b, op)`, ...);
* `nl.par_dim(n)` in shapes, and block dimensions before it (`beta1_blocks.py`);
* `nl.matmul(x, y)` with its implicit transpose of `x`, `nl.loop_reduce`, and
  `t[...] = nisa.op(...)` writing `t` directly (`_write_directly`);

* SPMD launch grids of any rank (`kernel[2, 2]`, `--grid 2,2`): `nl.program_id(axis)`,
  `nl.num_programs(axes)` and `nl.program_ndim()` are compile-time values; the grid's programs
  run one after another on one NeuronCore, as Beta 1 ran them (`entry.KernelCall.run`).

* `mask=` predicates comparing an affine index-grid expression with a compile-time bound, and
  their `&` (`beta1_mask.py`): the call runs on the sub-tiles the mask keeps, and a returned
  tile has the whole grid's shape, written where the mask holds.

* index grids in any order (`t[i_f, i_p]`, `t[i_p, i_j, i_j]`, an unused axis broadcast), and
  elementwise operations on grids of more free axes than an access pattern has, split into
  several instructions (`beta1_split.py`).

What is not (each a diagnostic naming it): other masks, an on-chip partition dimension indexed
by another grid axis than the first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...ir.core import Alloc, Inst
from ...ir.isa import FP32_MIN
from .. import (
    beta1_blocks,
    beta1_index,
    beta1_lowerings,
    beta1_mask,
    beta1_returning,
    beta1_split,
)
from ..beta1_index import GridSum, GridTuple, IndexGrid, arange, grid_binop, index_with_grids, mgrid
from ..beta1_returning import RETURNING
from ..language import ApiEntry, Language, Rules
from ..tensors import TensorView
from ..values import Builtin, Function, UserError
from .nki_0_3 import REMOVED_KEYWORDS, UNSUPPORTED, UNSUPPORTED_SYNTAX

#: Beta 1 module name -> the 0.3 module whose table it starts from.
MODULES = {
    "neuronxcc.nki": "nki",
    "neuronxcc.nki.language": "nki.language",
    "neuronxcc.nki.isa": "nki.isa",
    "neuronxcc.nki.typing": "nki.typing",
    "neuronxcc.nki.isa.constants": "nki.isa.constants",
}

#: The `nl` function each tile operator computes.
TILE_OPERATORS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power",
    "<<": "left_shift", ">>": "right_shift", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor",
}  # fmt: skip

#: `t op= x` on tiles that update `t` in place, with the ALU operator.
IN_PLACE = {"+": "add", "*": "multiply"}

#: Tile methods of Beta 1 (`t.broadcast_to(shape)`) -> the `nl` function they call on the tile.
TILE_METHODS = {"broadcast_to": "broadcast_to"}

#: numpy functions Beta 1 kernels pass as `op=` (the ALU operator of the same name).
NUMPY_OPS = (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift",
)  # fmt: skip

#: numpy functions Beta 1 kernels pass as activations (`op=np.square`), and the numpy names
#: of ALU reductions (`reduce_op=np.max`).
NUMPY_ACTIVATIONS = (
    "square", "tanh", "log", "sin", "abs", "sign", "arctan", "reciprocal", "copy",
)  # fmt: skip
NUMPY_ALIASES = {
    "max": "maximum", "min": "minimum", "amax": "maximum", "amin": "minimum", "sum": "add",
    "prod": "multiply",
}  # fmt: skip
#: numpy functions that are also host functions in kernels (`np.exp(2.0)`): passed to an
#: instruction, they are its activation of the same name.
NUMPY_HOST_OPS = ("exp", "sqrt")


def _par_dim(ip, call, n):
    return beta1_blocks.ParDim(ip.need_int(n, "the size of nl.par_dim"))


def _grid_axis(ip, axis, what: str) -> int:
    """`axis` of the launch grid; a kernel launched without a grid is one program, whose
    index is 0 along every axis."""
    axis = ip.need_int(axis, f"the axis of {what}")
    rank = len(ip.grid) or (axis + 1 if axis >= 0 else 1)
    if not 0 <= axis < rank:
        raise UserError(
            "err_invalid_argument",
            f"{what}: axis {axis} is outside the launch grid {list(ip.grid) or [1]} "
            f"(axes 0..{rank - 1})",
            None,
            "launch the kernel with a grid of that rank (kernel[d0, d1, ...], --grid D0,D1,...)",
        )
    return axis


def _program_id(ip, call, axis):
    """The index of the program along `axis` of the launch grid (0 without a grid)."""
    axis = _grid_axis(ip, axis, "nl.program_id")
    return ip.program[axis] if ip.grid else 0


def _num_programs(ip, call, axes=None):
    """The number of programs along `axes` (an axis or a tuple of axes); all of them when
    None."""
    if axes is None:
        chosen = range(len(ip.grid))
    else:
        items = axes if isinstance(axes, (tuple, list)) else (axes,)
        chosen = [_grid_axis(ip, a, "nl.num_programs") for a in items]
    total = 1
    for a in chosen:
        total *= ip.grid[a] if ip.grid else 1
    return total


def _table():
    from .nki_0_3 import _table as table_0_3

    base = table_0_3()
    table = {beta: dict(base[current]) for beta, current in MODULES.items()}
    table["nl.tile_size"] = dict(base["nl.tile_size"])
    nl = table["neuronxcc.nki.language"]
    nl["arange"] = ApiEntry(Builtin("nl.arange", lambda ip, call, *a: arange(*a)))
    nl["mgrid"] = ApiEntry(_MGRID)
    nl["par_dim"] = ApiEntry(Builtin("nl.par_dim", _par_dim))
    nl["program_id"] = ApiEntry(Builtin("nl.program_id", _program_id))
    nl["num_programs"] = ApiEntry(Builtin("nl.num_programs", _num_programs))
    nl["program_ndim"] = ApiEntry(Builtin("nl.program_ndim", lambda ip, call: len(ip.grid)))
    serial = "a grid launch, whose programs nkic runs one after another on one core"
    for name in ("spmd_dim", "nc"):
        nl[name] = ApiEntry(None, unsupported=True, replacement=serial)
    nl["loop_reduce"] = ApiEntry(Builtin("nl.loop_reduce", _loop_reduce, nki_api=True))
    for name in ("all_reduce", "atomic_rmw"):
        nl[name] = ApiEntry(None, unsupported=True)
    # Beta 1 loops take scheduling hints (`directives=`, `precise_schedule=`), which do not
    # change what the loop computes
    sequential = nl["sequential_range"].binding.fn
    for name in ("affine_range", "sequential_range", "static_range"):
        base = nl[name].binding
        nl[name] = ApiEntry(
            Builtin(base.name, _ignoring_hints(base.fn, sequential), nki_api=base.nki_api)
        )
    nl["fp32"] = ApiEntry(Fp32("float32"))
    for name in ("ndarray", "zeros", "ones", "full"):
        base = nl[name].binding
        create = beta1_blocks.creation(base.fn)
        nl[name] = ApiEntry(Builtin(base.name, create, nki_api=base.nki_api))
    lowerings = beta1_lowerings.lowerings()
    for name in beta1_lowerings.BUILTINS:
        nl[name] = ApiEntry(Builtin(f"nl.{name}", lowerings[name], nki_api=True))
    # Beta 1's other kernel entry points compile the same kernel (their execution modes —
    # baremetal, benchmark, profile, the tracing jit — do not change what it computes)
    jit = table["neuronxcc.nki"]["jit"].binding
    for name in ENTRY_POINTS - {"jit"}:
        table["neuronxcc.nki"][name] = ApiEntry(jit)
    table["neuronxcc"] = {"nki": ApiEntry(None, unsupported=True)}
    table["torch_neuronx"] = {"nki_jit": ApiEntry(jit)}
    table.update(_compiler_tables())
    return table


#: `neuronxcc.nki.compiler` decorators that tune the compiler's own passes; what the kernel
#: computes does not depend on them.
COMPILER_DECORATORS = (
    "skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc",
    "disable_sbuf_swizzle",
)  # fmt: skip


def _placement(buffer):
    """`ncc.sbuf.mod_alloc(...)`, `ncc.psum.alloc(func)`, ...: a direct allocation in
    `buffer`. nkic places the tensor itself: the placement Beta 1 derives from the allocator
    only decides which addresses the tensor reuses, not what the kernel computes (a block
    tensor so placed has one tile per block, `beta1_blocks.py`); `auto_alloc()` is `buffer`."""

    def allocator(ip, call, *args, **kwargs):
        return beta1_blocks.DirectAllocation(buffer.name)

    def auto(ip, call, *args, **kwargs):
        return buffer

    allocator.auto = auto
    return allocator

    return allocator


def _ignoring_hints(loop, sequential):
    """Beta 1's loop hints: `directives=` does not change what the loop computes;
    `precise_schedule=True` asks for the iterations in the order written, which software-
    pipelined loops rely on (iteration i reads what iteration i - 1 wrote): the loop is then a
    `sequential_range`, whose dependencies between iterations are kept."""

    def make(ip, call, start, stop=None, step=1, directives=None, precise_schedule=False):
        chosen = sequential if precise_schedule is True else loop
        return chosen(ip, call, start, stop, step)

    return make


def _compiler_tables() -> dict[str, dict[str, ApiEntry]]:
    from .. import nki_api, nki_surface

    tables: dict[str, dict[str, ApiEntry]] = {"neuronxcc.nki.compiler": {}}
    no_reorder = nki_surface.nl_bindings()["no_reorder"]
    tables["neuronxcc.nki.compiler"]["no_reorder"] = ApiEntry(no_reorder)
    for name in COMPILER_DECORATORS:
        keep = Builtin(f"ncc.{name}", lambda ip, call, fn=None, *a, **k: fn)
        tables["neuronxcc.nki.compiler"][name] = ApiEntry(keep)
    for space, buffer in (("sbuf", nki_api.SBUF), ("psum", nki_api.PSUM)):
        place = _placement(buffer)
        tables[f"neuronxcc.nki.compiler.{space}"] = {
            name: ApiEntry(Builtin(f"ncc.{space}.{name}", place)) for name in ("alloc", "mod_alloc")
        }
        tables[f"neuronxcc.nki.compiler.{space}"]["auto_alloc"] = ApiEntry(
            Builtin(f"ncc.{space}.auto_alloc", place.auto)
        )
    return tables


#: `neuronxcc.nki.X` decorators that make a Beta 1 kernel.
ENTRY_POINTS = frozenset({"jit", "trace", "baremetal", "benchmark", "profile"})


#: `nl` reductions Beta 1 kernels pass as `op=` of instructions -> the ALU operator.
NL_REDUCTION_OPS = {"nl.max": "maximum", "nl.min": "minimum", "nl.sum": "add"}


def _as_op(value):
    """`np.exp` passed to an instruction: the activation `nl.exp`; `nl.max`: `maximum`."""
    from ..values import NlOp

    name = getattr(value, "name", None) if isinstance(value, Builtin) else None
    if isinstance(name, str) and name.removeprefix("math.") in NUMPY_HOST_OPS:
        return NlOp(name.removeprefix("math."))
    if name in NL_REDUCTION_OPS:
        return NlOp(NL_REDUCTION_OPS[name])
    return value


def _np_identity(ip, call, n, dtype=None):
    """`np.identity(n, dtype=...)` / `np.eye(n)` at specialisation time, as nested lists (the
    form `nl.shared_constant` takes)."""
    n = ip.need_int(n, "the size of np.identity")
    if not 0 < n <= 512:
        raise UserError("err_invalid_argument", f"np.identity: size {n} outside 1..512")
    one = 1.0 if dtype is not None and "float" in str(dtype) else 1
    return [[one if i == j else one * 0 for j in range(n)] for i in range(n)]


#: Beta 1's `perf_mode=` strings of nc_matmul -> the matmul_perf_mode member.
PERF_MODES = {"none": "none", "double_row": "double_row", "double_row_gen3": "double_row"}


def _perf_mode(text: str):
    from ...ir.isa import ENUMS
    from ..values import IsaEnumMember

    member = PERF_MODES.get(text)
    if member is None:
        raise UserError(
            "err_invalid_argument",
            f"nc_matmul: unknown perf_mode {text!r}",
            None,
            f"use one of {', '.join(map(repr, PERF_MODES))}",
        )
    return IsaEnumMember("matmul_perf_mode", member, ENUMS["matmul_perf_mode"][member])


def _engine_can_start(view: TensorView) -> bool:
    """Whether a compute engine can access `view`'s partitions: P partitions starting at 0
    (P > 64), at 0 or 64 (P > 32), or at a multiple of 32."""
    step = view.pattern[0][0]
    offset = view.offset.const if view.offset.is_const else None
    if offset is None or step <= 0:
        return True  # not known here: the partition checks decide
    start, parts = offset // step, view.shape[0]
    allowed = (0,) if parts > 64 else (0, 64) if parts > 32 else (0, 32, 64, 96)
    return start in allowed


def _module_of(fn) -> str:
    from ..values import IsaInstr

    return "nisa" if isinstance(fn, IsaInstr) else "nl"


def _check_tile_operand(api: str, value, node) -> None:
    """Beta 1's APIs take tiles, whose first dimension is the partition dimension: a tensor
    with block dimensions before it is `err_failed_to_infer_tile_from_local_tensor`."""
    if isinstance(value, (beta1_blocks.BlockTensor, beta1_blocks.BlockList)):
        shape = ", ".join(map(str, value.shape))
        raise UserError(
            "err_failed_to_infer_tile_from_local_tensor",
            f"{api}: an operand of shape ({shape}) has block dimensions before its partition "
            "dimension, so it is not a tile",
            node,
            "index a block to get its tile (t[i], or t[i, i_p, i_f] with index grids)",
        )


def _drop_alloc(block: list, tensor) -> None:
    """Remove the allocation of `tensor` (a returning call's own tile, which its instruction no
    longer writes) from the last ops of `block`, unless an instruction there still uses it."""
    for i in range(len(block) - 1, max(-1, len(block) - 9), -1):
        op = block[i]
        if isinstance(op, Alloc) and op.result is tensor:
            del block[i]
            return
        if isinstance(op, Inst) and any(ap.tensor is tensor for _, ap in op.aps()):
            return


@dataclass(frozen=True)
class LoopReduce:
    """`nl.loop_reduce(x, op, loop_indices)`: `t = op(t, x)` for the tile `t` the result is
    assigned to (`t[...] = nl.loop_reduce(...)` or `t = nl.loop_reduce(...)`), one
    `tensor_tensor` writing `t` in place. Its loops may run their iterations in any order when
    `op` is associative (add, multiply, maximum, minimum)."""

    x: TensorView
    op: str
    call: object

    def into(self, ip, dst: TensorView) -> TensorView:
        return Beta1._update_in_place(ip, self.op, dst, self.x, self.call)


def _loop_reduce(ip, call, x, op, loop_indices=None, *, dtype=None, mask=None, name=None):
    """`nl.loop_reduce(x, op, loop_indices, dtype=)`: the reduction of `x` into the tile the
    result is assigned to (Beta 1: "the destination tile is also the rhs input to op").
    `loop_indices` and `dtype` only inform Beta 1's loop optimisations and the result's type,
    which is the destination's."""
    from ..values import NlOp

    if not isinstance(x, TensorView) or not x.on_chip:
        raise UserError(
            "err_invalid_argument",
            "nl.loop_reduce: `x` must be an SBUF or PSUM tile",
            call.arg_node(0, "x"),
        )
    op = _as_op(op)
    if isinstance(op, Builtin) and isinstance(op.name, str) and op.name.startswith("nl."):
        op = NlOp(op.name.removeprefix("nl."))
    if not isinstance(op, NlOp):
        raise UserError(
            "err_invalid_argument",
            "nl.loop_reduce: `op` must be an ALU operator such as np.add or nl.maximum",
            call.arg_node(1, "op"),
        )
    return LoopReduce(x, NUMPY_ALIASES.get(op.name, op.name), call)


def _dma_read_modify_write(ip, args: list, kwargs: dict, call):
    """`nisa.dma_copy(dst=t[idx, i_f], src=x, dst_rmw_op=np.add)`: every row of `x` added onto
    the row of `t` it goes to, rows with the same index all accumulating (Beta 1's compiler
    serialised them). It is NKI 0.3's `dma_compute(dst, [dst, src], nl.add,
    unique_indices=False)`, which nkic runs row by row."""
    from .. import nki_api
    from ..values import NlOp

    kwargs = dict(kwargs)
    op = kwargs.pop("dst_rmw_op")
    names = ("dst", "src", "mask", "dst_rmw_op", "oob_mode", "dge_mode")
    named = {**dict(zip(names, args)), **kwargs}
    if op is None:
        return nki_api.bind_isa(ip, "dma_copy", [], named, call)
    if not isinstance(op, NlOp) or op.name != "add":
        raise UserError(
            "err_invalid_argument",
            f"nisa.dma_copy: dst_rmw_op must be np.add (the only read-modify-write of Beta 1's "
            f"DMA), got {op!r}",
            call.arg_node(name="dst_rmw_op"),
            "pass dst_rmw_op=np.add, or copy without it",
        )
    oob = named.get("oob_mode")
    if oob is not None and getattr(oob, "name", None) != "error":
        raise UserError(
            "err_invalid_argument",
            "nisa.dma_copy: a read-modify-write takes only oob_mode=oob_mode.error (Beta 1)",
            call.arg_node(name="oob_mode"),
            "remove oob_mode=",
        )
    unknown = set(named) - {"dst", "src", "oob_mode", "dge_mode"}
    if unknown or "dst" not in named or "src" not in named:
        raise UserError(
            "err_invalid_argument",
            "nisa.dma_copy with dst_rmw_op takes dst= and src= (and dge_mode=)",
            call.node,
        )
    dst = named["dst"]
    values = {"dst": dst, "srcs": [dst, named["src"]], "reduce_op": NlOp("add"),
              "unique_indices": False}  # fmt: skip
    return nki_api.bind_isa(ip, "dma_compute", [], values, call)


class Fp32(str):
    """`nl.fp32`: the float32 dtype, whose `.min` is the most negative float32 (Beta 1's
    `on_false_value=nl.fp32.min`)."""


class _MGridValue:
    """`nl.mgrid`, subscripted to build index grids."""

    def __repr__(self) -> str:
        return "nl.mgrid"


_MGRID = _MGridValue()


class Beta1(Language):
    """Beta 1: its own module names, index grids, tile operators and returning instructions."""

    def modules(self):
        from .. import pylib
        from ..values import ModuleValue, NlOp

        mods = super().modules()
        mods["neuronxcc"].attrs["nki"] = mods["neuronxcc.nki"]
        # Beta 1 accepts numpy's functions as ALU operators (op=np.add) and numpy dtypes
        numpy = pylib.known_modules()["numpy"]
        attrs = dict(numpy.attrs)
        for name in NUMPY_OPS + NUMPY_ACTIVATIONS:
            attrs.setdefault(name, NlOp(name))
        for alias, name in NUMPY_ALIASES.items():
            attrs.setdefault(alias, NlOp(name))
        attrs.setdefault("identity", Builtin("np.identity", _np_identity))
        attrs.setdefault("eye", Builtin("np.eye", _np_identity))
        attrs.setdefault("dtype", Builtin("np.dtype", lambda ip, call, d: d))
        attrs.setdefault("bfloat16", "bfloat16")
        mods["numpy"] = ModuleValue("numpy", attrs)
        return mods

    def subscript(self, ip, obj, key):
        """`t[grid expressions]`, `nl.mgrid[...]` and `grid[:, None]`; MISSING otherwise."""
        from ..values import MISSING

        if obj is _MGRID:
            return mgrid(key)
        if isinstance(obj, Function) and obj.is_jit and ip.in_kernel:
            raise UserError(
                "err_nested_kernel_with_spmd_grid",
                f"'{obj.name}' is launched on an SPMD grid from inside a kernel",
                None,
                "launch grids only from the host; inside a kernel call a helper function "
                "(without @nki.jit) in a loop over the grid's indices",
            )
        if isinstance(obj, beta1_blocks.BlockTensor):
            return ip.getitem(obj.storage, obj.key(key))
        if isinstance(obj, beta1_blocks.BlockList):
            return obj.get(ip, key)
        if isinstance(obj, IndexGrid):
            return obj.placed(key if isinstance(key, tuple) else (key,))
        if isinstance(obj, TensorView):
            items = key if isinstance(key, tuple) else (key,)
            beta1_index.check_grid_ranks(items)
            if items and isinstance(items[0], TensorView):
                return beta1_index.indirect(obj, items)
            if any(isinstance(k, (IndexGrid, GridSum)) for k in items):
                try:
                    return index_with_grids(obj, items)
                except UserError as err:
                    if err.code != "err_tensor_access_out_of_bound":
                        raise
                    return beta1_mask.OutOfBounds(obj, items, err)  # unless a mask= keeps it in
        return MISSING

    def binop(self, ip, symbol: str, a, b, call, inplace: bool = False):
        """Tile operators and index-grid arithmetic; MISSING for everything else."""
        from ..values import MISSING

        for v in (a, b):
            if isinstance(v, beta1_mask.OutOfBounds):
                raise v.error
            _check_tile_operand(f"the operator '{symbol}'", v, call.node)
        if isinstance(a, beta1_mask.Mask) or isinstance(b, beta1_mask.Mask):
            both = beta1_mask.conjunction(a, b) if symbol == "&" else None
            if both is None:
                raise UserError(
                    "err_unsupported_api",
                    f"the operator '{symbol}' on mask predicates is not supported by nkic (only &)",
                    None,
                    beta1_mask.UNSUPPORTED_HINT,
                )
            return both
        if isinstance(a, (IndexGrid, GridSum)) or isinstance(b, (IndexGrid, GridSum)):
            if symbol in ("Lt", "LtE", "Gt", "GtE", "Eq", "NotEq"):
                mask = beta1_mask.compare(symbol, a, b)
                if mask is None:
                    mask = beta1_returning.grid_predicate(symbol, a, b)
                if mask is None:
                    raise UserError(
                        "err_unsupported_api",
                        "this comparison of index grids is not a mask nkic supports",
                        None,
                        beta1_mask.UNSUPPORTED_HINT,
                    )
                return mask
            result = grid_binop(symbol, a, b)
            if result is None:
                raise UserError(
                    "err_unsupported_api",
                    f"the operator '{symbol}' on index grids is not supported by nkic (only "
                    "+, - and * with compile-time values)",
                    None,
                    "write the index as start + step * nl.arange(n)",
                )
            return result
        node = call.node
        addend = node.value if isinstance(node, ast.AugAssign) else getattr(node, "right", None)
        if (
            symbol == "+"
            and isinstance(a, TensorView)
            and isinstance(b, TensorView)
            and isinstance(addend, ast.Call)
        ):
            # `acc += nisa.nc_matmul(...)`: no name holds the call's own tile, so the matmul
            # can accumulate into `acc`; `x = nisa.nc_matmul(...); acc += x` keeps `x`
            accumulated = self._accumulate(ip, a, b)
            if accumulated is not None:
                if inplace and isinstance(node, ast.AugAssign):
                    _drop_alloc(ip.builder.block, b.tensor)
                return accumulated
        if inplace and symbol in IN_PLACE and isinstance(a, TensorView) and a.on_chip:
            return self._update_in_place(ip, IN_PLACE[symbol], a, b, call)
        if isinstance(a, TensorView) or isinstance(b, TensorView):
            name = TILE_OPERATORS.get(symbol)
            if name is None:
                raise UserError(
                    "err_unsupported_api", f"the operator '{symbol}' is not defined on tiles"
                )
            lower = self.lowerings[name]
            return ip.call_builtin(Builtin(f"nl.{name}", lower, True), [a, b], {}, call)
        return MISSING

    @staticmethod
    def _update_in_place(ip, name: str, acc: TensorView, value, call) -> TensorView:
        """`acc += x`, `acc *= x` on an on-chip tile: one instruction writing `acc` itself (an
        associative update, which Beta 1's `affine_range` loops may reorder)."""
        from ..nl_lowering import emit, op

        if isinstance(value, TensorView):
            if value.shape != acc.shape:
                value = beta1_lowerings.broadcast_to(ip, call, name, value, acc.shape)
            if acc.buffer == "psum":
                # Vector engine operands: at most one of them in PSUM
                value = beta1_lowerings.in_sbuf(ip, call, value)
            emit(ip, call, "tensor_tensor", dst=acc, data1=acc, data2=value, op=op(name))
        else:
            number = ip.need_concrete(value, "a number or a tile")
            emit(ip, call, "tensor_scalar", dst=acc, data=acc, op0=op(name), operand0=number)
        return acc

    @staticmethod
    def _accumulate(ip, acc: TensorView, result: TensorView):
        """`psum_tile += nisa.nc_matmul(...)`: the matmul just emitted writes into `psum_tile`
        instead of its own new tile, accumulating there as the PE array does (Beta 1's PSUM
        accumulation idiom). None when `result` is not that matmul's fresh result."""
        pending = getattr(ip, "_beta1_matmul", None)
        if pending is None or acc.tensor.buffer != "psum":
            return None
        fresh, inst = pending
        block = ip.builder.block
        if result is not fresh or not block or block[-1] is not inst or acc.shape != fresh.shape:
            return None
        inst.operands["dst"] = acc.to_ap()
        ip._beta1_matmul = None
        return acc

    def call_api(self, ip, fn, args: list, kwargs: dict, call):
        from ..values import IsaInstr

        if isinstance(fn, IsaInstr):
            args = [_as_op(a) for a in args]
            kwargs = {k: _as_op(v) for k, v in kwargs.items()}
            if isinstance(kwargs.get("perf_mode"), str):
                kwargs["perf_mode"] = _perf_mode(kwargs["perf_mode"])
        if isinstance(fn, IsaInstr) and fn.name == "dma_copy" and "dst_rmw_op" in kwargs:
            return _dma_read_modify_write(ip, args, kwargs, call)
        if isinstance(fn, IsaInstr) and "dst" not in kwargs and fn.name in RETURNING:
            return self._returning(ip, fn.name, args, kwargs, call)
        return super().call_api(ip, fn, args, kwargs, call)

    @staticmethod
    def _load(ip, fn, args: list, kwargs: dict, call):
        """`nl.load(...)`, marked as a fresh result: `t[...] = nl.load(...)` loads into `t`
        itself (`_write_directly`), one DMA as Beta 1 compiled it, not a DMA and a copy."""
        result = ip.call_builtin(fn, args, kwargs, call)
        block = ip.builder.block
        last = block[-1] if block else None
        if isinstance(result, TensorView) and isinstance(last, Inst) and last.opcode == "dma_copy":
            if last.operands["dst"].tensor is result.tensor:
                ip._beta1_fresh = (result, last, call.node)
        return result

    def intercept_call(self, ip, fn, args: list, kwargs: dict, call):
        """`mask=`: the call on the sub-tiles the mask keeps (`beta1_mask.py`); an index-grid
        subscript past a tensor's end is an error unless such a mask keeps it inside."""
        from ..values import MISSING

        if not isinstance(fn, Builtin) or fn.nki_api:
            api = fn.name if isinstance(fn, Builtin) else f"{_module_of(fn)}.{fn.name}"
            for i, v in enumerate(args):
                _check_tile_operand(api, v, call.arg_node(index=i))
            for k, v in kwargs.items():
                _check_tile_operand(api, v, call.arg_node(name=k))

        if "mask" not in kwargs:
            for v in (*args, *kwargs.values()):
                if isinstance(v, beta1_mask.OutOfBounds):
                    raise v.error
            if isinstance(fn, Builtin) and fn.name == "nl.load":
                return self._load(ip, fn, args, kwargs, call)
            return MISSING
        kwargs = dict(kwargs)
        mask = kwargs.pop("mask")
        name = fn.name.removeprefix("nl.")
        try:
            restricted = beta1_mask.restrict(ip, name, args, kwargs, mask)
        except UserError as err:
            if err.node is None and not getattr(err, "loc", None):
                err.node = call.arg_node(name="mask")
            raise
        if restricted is None:
            return None  # the mask keeps nothing: the operation does nothing
        block = ip.builder.block
        start = len(block)
        result = ip.call(fn, restricted[0], restricted[1], call)
        kept = beta1_mask.ranges(ip, mask)
        args, kwargs = restricted
        full = beta1_mask.widen(ip, fn, name, args, kwargs, mask, kept, result, block, start, call)
        if full is not None:
            return full
        beta1_mask.mark_result(ip, result, kept, mask.predicates[0].grid.ndim)
        return result

    def _returning(self, ip, name: str, args, kwargs, call):
        dst = beta1_returning.call(ip, name, args, kwargs, call)
        if name == "nc_matmul":
            ip._beta1_matmul = (dst, ip.builder.block[-1])
        ip._beta1_fresh = (dst, ip.builder.block[-1], call.node)
        return dst

    @staticmethod
    def _write_directly(ip, dst: TensorView, value) -> bool:
        """`t[...] = nisa.op(...)`: the instruction just emitted writes `t` itself rather than
        its own new tile and a copy of it, as Beta 1 compiled it (a matmul writes the PSUM
        block it is assigned to). Only when the tile is that instruction's fresh result, the
        call is the assignment's whole right-hand side (nothing else keeps the tile), in the
        same buffer and shape as `t`, of `t`'s dtype or float32, and the instruction does
        not read `t`."""
        fresh = getattr(ip, "_beta1_fresh", None)
        if fresh is None or value is not fresh[0]:
            return False
        if fresh[2] is None or getattr(ip, "assigned_expr", None) is not fresh[2]:
            return False  # the tile may be read again through a name, list, ...: keep it
        inst = fresh[1]
        block = ip.builder.block
        out = inst.operands.get("dst")
        if not block or block[-1] is not inst or out is None or out.tensor is not value.tensor:
            return False
        if (dst.buffer, dst.shape) != (value.buffer, value.shape):
            return False
        # engines compute in float32 and convert on writing: a float32 result copied into `t`
        # is rounded once, as writing `t` directly rounds it (a matmul's PSUM dtype is its own)
        if dst.dtype != value.dtype and (
            value.dtype != "float32" or "matmul" in inst.opcode or inst.opcode == "dma_copy"
        ):
            return False  # (a DMA's conversion is the load's; the copy's would round again)
        if dst.dynamic is not None or any(
            ap.tensor is dst.tensor for name, ap in inst.aps() if name != "dst"
        ):
            return False
        inst.operands["dst"] = dst.to_ap()
        ip._beta1_fresh = None
        if getattr(ip, "_beta1_matmul", None) is not None and ip._beta1_matmul[1] is inst:
            ip._beta1_matmul = (dst, inst)
        _drop_alloc(block, value.tensor)  # nothing holds the call's own tile any more
        return True

    def is_launch_entry_point(self, value) -> bool:
        """`nki.jit(mode=...)`, `nki.baremetal(...)`, `nki.benchmark(...)`, `nki.profile(...)`:
        their arguments choose how the kernel runs on a device (modes, artifact directories,
        iteration counts), never what it computes."""
        from .. import nki_api

        return isinstance(value, Builtin) and value.fn is nki_api.jit

    def split_instruction(self, name: str, operands: dict, tiles: tuple[str, ...]) -> list:
        """An elementwise operation on index grids of more axes than an access pattern has
        dimensions: several instructions (`beta1_split.py`)."""
        return beta1_split.split(name, operands, tiles)

    def store_into(self, ip, dst: TensorView, value, call) -> None:
        """`t[i, j] = 5` on partitions an engine cannot start at (`t[1, j]`: one partition,
        not at 0/32/64/96): the constant is set in a tile of its own and DMA-copied there (a
        DMA reaches any partition), as Beta 1 wrote single elements anywhere."""
        from ..nl_lowering import emit, new_tile

        if isinstance(value, TensorView) and (
            beta1_mask.write_widened(ip, dst, value) or self._write_directly(ip, dst, value)
        ):
            return
        if isinstance(value, LoopReduce):
            value.into(ip, dst)
            return
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and dst.on_chip
            and not _engine_can_start(dst)
        ):
            fill = new_tile(ip, call, dst.shape, dst.dtype)
            emit(ip, call, "memset", dst=fill, value=value)
            emit(ip, call, "dma_copy", dst=dst, src=fill)
            return
        super().store_into(ip, dst, value, call)

    def bind_name(self, ip, name: str, value):
        """`qk = nl.ndarray((8, nl.par_dim(128), 512), buffer=nl.psum)` names the blocks
        `qk[0]`, ...; `t = nl.loop_reduce(x, op, ...)` reduces into the tile `t` holds."""
        if isinstance(value, beta1_blocks.BlockList):
            value.label(name)
        if isinstance(value, LoopReduce):
            scope = ip.scope.find(name)
            current = scope.vars.get(name) if scope is not None else None
            if not isinstance(current, TensorView) or not current.on_chip:
                raise UserError(
                    "err_invalid_argument",
                    f"nl.loop_reduce reduces into the tile it is assigned to, and '{name}' "
                    "does not hold an SBUF or PSUM tile here",
                    value.call.node,
                    f"create the tile first, e.g. {name} = nl.zeros(shape, dtype, buffer=nl.sbuf)",
                )
            return value.into(ip, current)
        return value

    def call_value(self, ip, fn, args: list, kwargs: dict, call):
        """`np.float32(0.5)`, `nl.int32(3)`: a dtype called on a number is that number in the
        dtype (numpy dtypes are scalar types in Beta 1)."""
        from ...ir.types import DTYPES
        from ..values import MISSING

        if not isinstance(fn, str) or fn not in DTYPES or kwargs or len(args) != 1:
            return MISSING
        value = ip.need_concrete(args[0], "a number")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError("err_type_error", f"{fn}() takes a number, got {value!r}")
        if DTYPES[fn].is_int:
            return int(value)
        import ml_dtypes  # the value rounded to the dtype, as numpy would hold it
        import numpy as np

        scalar = getattr(np, fn, None) or getattr(ml_dtypes, fn, None)
        return float(scalar(value)) if scalar is not None else float(value)

    def isa_keywords(self, name: str) -> list[str]:
        """NKI 0.3's keywords, and Beta 1's own (`dtype=`, `iota(expr=)`, ...)."""
        names = super().isa_keywords(name)
        extra = beta1_returning.RETURNING.get(name)
        rmw = ["dst_rmw_op"] if name == "dma_copy" else []
        return names + ["dtype"] + rmw + (list(extra.positional) if extra else [])

    def attribute(self, ip, obj, name: str):
        """`nl.mgrid[...]` results' `.p` / `.x`, and `nl.fp32.min`; else as NKI 0.3."""
        if isinstance(obj, GridTuple) and name in GridTuple.AXES:
            grid = obj.axis(name)
            if grid is None:
                raise UserError(
                    "err_attribute_error",
                    f"this nl.mgrid has {len(obj)} axes: it has no axis '{name}'",
                    None,
                    f"use {', '.join('.' + a for a in GridTuple.AXES[: len(obj)])}",
                )
            return grid
        if isinstance(obj, (beta1_blocks.BlockTensor, beta1_blocks.BlockList)):
            if name in ("shape", "dtype"):
                return getattr(obj, name)
            raise UserError(
                "err_unsupported_api",
                f"'.{name}' of a tensor with block dimensions is not supported by nkic",
                None,
                "index one block first (t[i])",
            )
        if isinstance(obj, TensorView) and name in TILE_METHODS:
            lower = self.lowerings[TILE_METHODS[name]]
            return Builtin(
                f"tile.{name}", lambda ip_, call, *a, **k: lower(ip_, call, obj, *a, **k)
            )
        if isinstance(obj, Fp32) and name in ("min", "max"):
            return FP32_MIN if name == "min" else -FP32_MIN
        return super().attribute(ip, obj, name)


BETA1 = Beta1(
    "NKI Beta 1",
    "beta1",
    _table(),
    removed_keywords=REMOVED_KEYWORDS,
    lowerings=beta1_lowerings.lowerings(),
    # affine_range iterations may run in any order in Beta 1: a dependency between them is wrong
    rules=Rules(
        unsupported_syntax=UNSUPPORTED_SYNTAX,
        affine_dependency="error",
        output_buffers=("shared_hbm", "hbm"),
        shared_hbm_top_level=True,
        block_scoped_tensors=True,
        tile_augmented_assignment=True,
        symbolic_range=False,
    ),
    package="neuronxcc.nki",
    kernel_decorators=ENTRY_POINTS,
)
BETA1.call_keywords = frozenset({"mask"})  # beta1_mask.py

__all__ = ["BETA1", "UNSUPPORTED"]
