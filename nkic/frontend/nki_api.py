"""The implementation of the NKI API shared by every language version: argument conversion,
tensor creation, loop iterators, tensor metadata and view methods, and the binding of `nki.isa`
calls to IR instructions through the catalogue in `nkic.ir.isa`. Which names a kernel sees is
decided by its language (`language.py`, `nki_surface.py`)."""

from __future__ import annotations

import difflib
import functools

from ..ir.core import Imm
from ..ir.isa import ACTIVATIONS, ALU_OPS, ENUMS, INSTRUCTIONS
from ..ir.types import DTYPES
from .pylib import make_range
from .registers import Register, version_at_least
from .tensors import GridView, TensorView, type_name
from .values import (
    MISSING,
    POISON,
    BufferValue,
    Builtin,
    DynSlice,
    Function,
    IsaEnum,
    IsaEnumMember,
    NlOp,
    PoisonError,
    UserError,
    is_symbolic,
    norm_int,
)

SBUF = BufferValue("sbuf")
PSUM = BufferValue("psum")
HBM = BufferValue("hbm")
SHARED_HBM = BufferValue("shared_hbm")

#: `nl.tile_size` (Language §5.3); only the documented values.
TILE_SIZE = {
    "pmax": 128,
    "psum_fmax": 512,
    "psum_bank_fmax": 512,
    "psum_bank_fmax_bytes": 2048,
    "psum_num_banks": 8,
    "gemm_stationary_fmax": 128,
    "gemm_moving_fmax": 512,
    "bn_stats_fmax": 512,
}

_NC_VERSION = {"trn1": "gen2", "trn2": "gen3", "trn3": "gen4"}


def get_nc_version(ip, call):
    gen = _NC_VERSION[ip.target]
    return IsaEnumMember("nc_version", gen, ENUMS["nc_version"][gen])


# ---------------------------------------------------------------------------------------------
# argument conversion


def dtype_arg(v, what: str = "dtype") -> str:
    if isinstance(v, str):
        name = "bool" if v == "bool_" else v
        if name in DTYPES:
            return name
    raise UserError(
        "err_invalid_argument",
        f"{what} must be an NKI dtype such as nl.float32, got {_show(v)}",
        None,
        _did_you_mean(v, DTYPES) if isinstance(v, str) else None,
    )


def buffer_arg(v) -> str:
    if isinstance(v, BufferValue):
        return v.name
    if isinstance(v, str):
        raise UserError(
            "err_invalid_argument",
            f"buffer names are not accepted as strings ({v!r}) in NKI 0.3.0",
            None,
            f"use nl.{v}"
            if v in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm")
            else "use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm",
        )
    raise UserError(
        "err_invalid_argument",
        f"buffer must be nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm, got {_show(v)}",
    )


def shape_arg(ip, v) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, (tuple, list)):
        raise UserError("err_invalid_argument", f"shape must be a tuple of ints, got {_show(v)}")
    shape = tuple(ip.need_int(d, "a tensor dimension") for d in v)
    if not shape or any(d <= 0 for d in shape):
        raise UserError("err_invalid_argument", f"invalid tensor shape {shape}")
    return shape


def _show(v) -> str:
    return repr(v) if isinstance(v, (str, int, float, type(None))) else type_name(v)


def _did_you_mean(word: str, choices) -> str | None:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean '{close[0]}'?" if close else None


# ---------------------------------------------------------------------------------------------
# nki.language


def _checked(call, index: int, name: str, convert, *args):
    """`convert(*args)` with its errors pointing at argument `name` (or position `index`)."""
    try:
        return convert(*args)
    except UserError as err:
        if err.node is None:
            err.node = call.arg_node(index, name)
        raise


def ndarray(ip, call, shape, dtype, buffer=SBUF, name="", address=None):
    shape = _checked(call, 0, "shape", shape_arg, ip, shape)
    dtype = _checked(call, 1, "dtype", dtype_arg, dtype)
    buf = _checked(call, 2, "buffer", buffer_arg, buffer)
    if name is None:  # the NKI Library's allocators pass name=None for an unnamed tensor
        name = ""
    if not isinstance(name, str):
        raise UserError(
            "err_invalid_argument", "name= must be a string", call.arg_node(name="name")
        )
    addr = None
    if address is not None:
        if not isinstance(address, (tuple, list)) or len(address) != 2:
            raise UserError(
                "err_invalid_argument",
                "address= must be a (partition_offset, free_offset) pair",
                call.arg_node(name="address"),
            )
        addr = (ip.need_int(address[0]), ip.need_int(address[1]))
        if buf not in ("sbuf", "psum"):
            raise UserError(
                "err_invalid_argument",
                f"address= places a tensor in SBUF or PSUM; a {buf} tensor has no address",
                call.arg_node(name="address"),
                "drop address= (HBM tensors are placed by the runtime)",
            )
    return ip.alloc(shape, dtype, buf, name, addr, call)


def empty_like(ip, call, x, dtype=None, buffer=None, name=""):
    if not isinstance(x, TensorView):
        raise UserError("err_invalid_argument", f"expected a tensor, got {type_name(x)}")
    return ndarray(
        ip, call, x.shape, x.dtype if dtype is None else dtype,
        BufferValue(x.buffer) if buffer is None else buffer, name,
    )  # fmt: skip


def ds(ip, call, start, size):
    if isinstance(start, Register):
        raise UserError(
            "err_invalid_argument",
            f"nl.ds start must be a compile-time integer, got a {start.type_name}",
            call.arg_node(0, "start"),
            "index with a run-time value through a view: "
            "t.ap(pattern, scalar_offset=reg, indirect_dim=d)",
        )
    start = norm_int(start)
    if not isinstance(start, int) and not is_symbolic(start) or isinstance(start, bool):
        raise UserError(
            "err_invalid_argument", f"nl.ds start must be an integer, got {_show(start)}"
        )
    size = ip.need_int(size, "the size of nl.ds")
    if size < 0:
        raise UserError("err_invalid_argument", f"nl.ds size must not be negative, got {size}")
    return DynSlice(start, size)


def loop_iterator(kind: str):
    def make(ip, call, start, stop=None, step=1):
        args = (start,) if stop is None else (start, stop, step)
        return make_range(ip, kind, args)

    return make


def buffer_predicate(names: tuple[str, ...]):
    def check(ip, call, buffer):
        return buffer_arg(buffer) in names

    return check


def bind_isa(ip, name: str, args: list, kwargs: dict, call):
    """Bind a `nisa.<name>(...)` call by the catalogue and emit the instruction."""
    d = INSTRUCTIONS[name]
    names, by_name = _signature(name)
    if len(args) > len(names):
        raise UserError(
            "err_type_error",
            f"nisa.{name}() takes at most {len(names)} positional arguments "
            f"but {len(args)} were given",
            call.node,
        )
    values: dict[str, object] = dict(zip(names, args))
    errors: list[UserError] = []
    if "dtype" in kwargs and "dtype" not in by_name and "dst" in by_name:
        kwargs = dict(kwargs)
        _removed_dtype(ip, name, kwargs.pop("dtype"), values.get("dst", kwargs.get("dst")), call)
    unknown = False
    for k, v in kwargs.items():
        if k not in by_name:
            unknown = True
            errors.append(
                UserError(
                    "err_unexpected_keyword",
                    f"nisa.{name}() got an unexpected keyword argument '{k}'",
                    call.arg_node(name=k),
                    ip.language.keyword_hint(k, names),
                )
            )
            continue
        if k in values:
            errors.append(
                UserError(
                    "err_type_error",
                    f"nisa.{name}() got multiple values for argument '{k}'",
                    call.arg_node(name=k),
                )
            )
            continue
        values[k] = v
    # a misspelt keyword (`val=` for `value=`) is reported once, not also as a missing argument
    given = values.keys()
    if unknown:
        given = given | {
            m for k in kwargs if k not in by_name for m in difflib.get_close_matches(k, names, 1)
        }
    missing = [p.name for p in d.params if p.required and p.name not in given]
    if missing:
        errors.append(
            UserError(
                "err_missing_argument",
                f"nisa.{name}() missing required argument{'s' if len(missing) > 1 else ''}: "
                + ", ".join(f"'{m}'" for m in missing),
                call.node,
            )
        )
    if errors:
        for err in errors[:-1]:
            err.loc = ip.loc(err.node)
            ip.report(err)
        raise errors[-1]
    return emit_isa(ip, name, values, _ArgNodes(call, names, len(args)), call)


@functools.cache
def _signature(name: str) -> tuple[list[str], dict]:
    """(parameter names in order, parameters by name) of `nisa.<name>`."""
    params = INSTRUCTIONS[name].params
    return [p.name for p in params], {p.name: p for p in params}


@functools.cache
def _tile_params(name: str) -> tuple[str, ...]:
    """The tile operands (inputs and outputs) of `nisa.<name>`."""
    return tuple(p.name for p in INSTRUCTIONS[name].params if p.role in ("in", "out"))


class _ArgNodes:
    """The argument node of each parameter of a bound `nisa` call, found when a diagnostic
    needs one (as `emit_isa`'s `nodes`)."""

    __slots__ = ("call", "names", "n_positional")

    def __init__(self, call, names: list[str], n_positional: int):
        self.call = call
        self.names = names
        self.n_positional = n_positional

    def get(self, name: str, default=None):
        if name in self.names[: self.n_positional]:
            return self.call.arg_node(self.names.index(name))
        if name in self.call.kw_nodes:
            return self.call.arg_node(name=name)
        return default


def _removed_dtype(ip, name: str, dtype, dst, call) -> None:
    """`dtype=` on a `nisa` call that writes `dst`: NKI 0.2.0 removed the keyword, yet current
    NKI still accepts it (the NKI Library passes it). The result takes the dst tile's dtype, so
    a `dtype=` naming another dtype would not mean what it says: that is an error."""
    node = call.arg_node(name="dtype")
    try:
        given = dtype_arg(dtype)
    except UserError as err:
        err.node = err.node or node
        raise
    if isinstance(dst, TensorView) and dst.dtype != given:
        raise UserError(
            "err_invalid_argument",
            f"nisa.{name}(dtype={given}) writes a {dst.dtype} dst tile: the result takes the "
            "dst tile's dtype, not dtype=",
            node,
            f"allocate dst as {given} to convert, and remove dtype= (removed in NKI 0.2.0)",
        )
    ip.warn(
        "nkic_removed_keyword",
        f"nisa.{name}(): dtype= was removed in NKI 0.2.0; the dst tile's dtype is used",
        node,
        "remove dtype=: the dst tile's dtype already gives the result's dtype",
    )


#: Instructions whose tensor operands may carry a runtime offset (`.ap(vector_offset= /
#: scalar_offset=)`): the DMAs whose descriptors the DGE generates from an index tile.
DYNAMIC_OPERANDS = frozenset({"dma_copy", "dma_compute", "dma_transpose"})


def _is_indirect(v) -> bool:
    """A tensor-indirection view (`.indirect(index)`)."""
    return isinstance(v, TensorView) and v.dynamic is not None and v.dynamic[0] == "indirect"


def emit_isa(ip, name: str, values: dict, nodes: dict, call):
    d = INSTRUCTIONS[name]
    operands: dict[str, object] = {}
    attrs: dict[str, object] = {}
    for p in d.params:
        if p.name not in values:
            if not p.is_tensor:
                attrs[p.name] = p.default
            elif p.default is not None:
                operands[p.name] = Imm(p.default)
            continue
        v = values[p.name]
        if v is POISON:
            raise PoisonError()
        try:
            if p.is_tensor and _is_indirect(v):
                # whether this operand takes tensor indirection: the operand rules
                index = f"{p.name}.index"
                operands[p.name], operands[index] = v.to_dynamic_ap(index)
            elif p.role in ("out", "in"):
                if v is None and p.default is None:
                    continue
                if name in DYNAMIC_OPERANDS and isinstance(v, TensorView) and v.dynamic:
                    index = f"{p.name}.{v.dynamic[0]}_offset"
                    operands[p.name], operands[index] = v.to_dynamic_ap(index)
                    continue
                operands[p.name] = _tensor_operand(v, p.name)
            elif p.role == "val":
                if v is None:  # e.g. operand0=None for a unary op0
                    continue
                operands[p.name] = _value_operand(ip, v, p.name)
            elif p.role == "ins":
                items = v if isinstance(v, (list, tuple)) else None
                if not items:
                    raise UserError(
                        "err_invalid_argument", f"'{p.name}' must be a non-empty list of tensors"
                    )
                for i, item in enumerate(items):
                    key = f"{p.name}.{i}"
                    if name in DYNAMIC_OPERANDS and isinstance(item, TensorView) and item.dynamic:
                        index = f"{key}.{item.dynamic[0]}_offset"
                        operands[key], operands[index] = item.to_dynamic_ap(index)
                        continue
                    operands[key] = _tensor_operand(item, p.name)
            else:
                attrs[p.name] = _attr(ip, p, v)
        except UserError as err:
            if err.node is None:
                err.node = nodes.get(p.name, call.node)
            raise
    if name == "quantize_mx" and ip.language.rules.mx_scale == "ocp":
        attrs["scale_rule"] = "ocp"  # the group scale before NKI 0.5 (Rules.mx_scale)
    for part in ip.language.split_instruction(name, operands, _tile_params(name)):
        ip.emit(name, part, attrs, call)
    return None


def _tensor_operand(v, pname: str):
    if isinstance(v, TensorView):
        return v.to_ap()
    hint = f"pass the grid's tensor view, {pname}=grid.data" if isinstance(v, GridView) else None
    raise UserError(
        "err_invalid_argument", f"'{pname}' must be a tensor, got {type_name(v)}", None, hint
    )


def _value_operand(ip, v, pname: str):
    if isinstance(v, TensorView):
        return v.to_ap()
    v = ip.need_concrete(v, "an immediate operand")
    if isinstance(v, (int, float)):
        return Imm(v)
    raise UserError(
        "err_invalid_argument",
        f"'{pname}' must be a tensor or a number, got {type_name(v)}",
    )


def _attr(ip, p, v):
    kind = p.kind
    if v is None and p.default is None:
        return None
    if kind == "alu" or kind == "act":
        table = ALU_OPS if kind == "alu" else ACTIVATIONS
        if isinstance(v, NlOp) and v.name in table:
            return v.name
        what = "an ALU operator such as nl.add" if kind == "alu" else "an activation such as nl.exp"
        raise UserError("err_invalid_argument", f"'{p.name}' must be {what}, got {_show_op(v)}")
    if kind.startswith("enum:"):
        enum = kind[5:]
        if isinstance(v, IsaEnumMember) and v.enum == enum:
            return v.name
        if isinstance(v, int) and not isinstance(v, bool):
            # the NKI compiler reads a member's integer value as the member (the NKI Library
            # passes `dge_mode=3` for nisa.dge_mode.none)
            for member, value in ENUMS[enum].items():
                if value == v:
                    return member
            raise UserError(
                "err_invalid_argument",
                f"'{p.name}' takes a nisa.{enum} member; the integer {v} is not the value of one",
                None,
                "use one of: "
                + ", ".join(f"nisa.{enum}.{m} ({value})" for m, value in ENUMS[enum].items()),
            )
        raise UserError(
            "err_invalid_argument",
            f"'{p.name}' must be a nisa.{enum} member, got {_show(v)}",
        )
    if kind == "bool":
        if isinstance(v, bool):
            return v
        raise UserError("err_invalid_argument", f"'{p.name}' must be True or False, got {_show(v)}")
    if kind == "int":
        return ip.need_int(v, f"an integer for '{p.name}'")
    if kind in ("float", "scalar"):
        v = ip.need_concrete(v, f"a number for '{p.name}'")
        if isinstance(v, (int, float)) and (kind == "scalar" or not isinstance(v, bool)):
            return float(v) if kind == "float" else v
        raise UserError("err_invalid_argument", f"'{p.name}' must be a number, got {_show(v)}")
    if kind == "ints":
        if isinstance(v, int) and not isinstance(v, bool):
            return (v,)
        if isinstance(v, (list, tuple)):
            return tuple(ip.need_int(x, f"integers for '{p.name}'") for x in v)
        raise UserError("err_invalid_argument", f"'{p.name}' must be a tuple of ints")
    if kind == "floats":
        if isinstance(v, (list, tuple)):
            return tuple(float(_number(ip, x, p.name)) for x in v)
        raise UserError("err_invalid_argument", f"'{p.name}' must be a list of numbers")
    if kind == "dtype":
        return dtype_arg(v, p.name)
    if kind == "str":
        if isinstance(v, str):
            return v
        raise UserError("err_invalid_argument", f"'{p.name}' must be a string, got {_show(v)}")
    if kind == "pattern":
        if isinstance(v, (list, tuple)) and v:
            out = []
            for pair in v:
                if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                    raise UserError("err_invalid_argument", f"'{p.name}' entries are [step, num]")
                out.append(tuple(ip.need_int(x, "an integer") for x in pair))
            return tuple(out)
        raise UserError("err_invalid_argument", f"'{p.name}' must be a list of [step, num] pairs")
    return _literal(ip, v, p.name)


def _number(ip, x, pname):
    x = ip.need_concrete(x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    raise UserError("err_invalid_argument", f"'{pname}' must contain numbers")


def _literal(ip, v, pname):
    v = ip.deep_concrete(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return tuple(_literal(ip, x, pname) for x in v)
    if isinstance(v, NlOp):
        return v.name
    if isinstance(v, IsaEnumMember):
        return v.name
    raise UserError("err_invalid_argument", f"'{pname}' must be a compile-time constant")


def _show_op(v) -> str:
    if isinstance(v, NlOp):
        return f"nl.{v.name}"
    if isinstance(v, (Function, Builtin)):
        return "a function"
    return _show(v)


# ---------------------------------------------------------------------------------------------
# tensors: metadata, views, item assignment


def store_into(ip, dst: TensorView, value, call) -> None:
    """`t[...] = value`: a copy of a tile or a fill with a constant."""
    if isinstance(value, TensorView):
        if dst.on_chip and value.on_chip:
            emit_isa(ip, "tensor_copy", {"dst": dst, "src": value}, {}, call)
        else:
            emit_isa(ip, "dma_copy", {"dst": dst, "src": value}, {}, call)
        return
    value = ip.need_concrete(value, "a fill value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not dst.on_chip:
            raise UserError(
                "err_unsupported_memory",
                "cannot fill an HBM tensor with a constant",
                call.node,
                "fill an SBUF tile with nisa.memset and copy it with nisa.dma_copy",
            )
        emit_isa(ip, "memset", {"dst": dst, "value": value}, {}, call)
        return
    raise UserError(
        "err_type_error",
        f"cannot assign {type_name(value)} to a tensor",
        call.node,
        "assign a tile or a number",
    )


#: The attributes of a tensor that are values (the others are methods).
_TENSOR_VALUES = {
    "shape": lambda t: t.shape,
    "dtype": lambda t: t.dtype,
    "buffer": lambda t: BufferValue(t.buffer),
    "strides": lambda t: t.strides,
    "offset": lambda t: norm_int(t.offset),
    "ndim": lambda t: len(t.pattern),
    "size": lambda t: t.size,
    "name": lambda t: t.tensor.label,
}


def tensor_attribute(ip, t: TensorView, name: str):
    simple = _TENSOR_VALUES.get(name)
    if simple is not None:
        return simple(t)
    if name not in ("is_indirect", "get_pattern"):
        t.static_only(f"NkiTensor.{name}")

    def method(fn):
        return Builtin(f"NkiTensor.{name}", fn)

    if name == "reshape":
        return method(lambda ip_, call, *shape: t.reshape(_dims(shape)))
    if name in ("view", "reinterpret_cast"):
        return method(lambda ip_, call, dtype: t.view(dtype_arg(dtype)))
    if name == "permute":
        return method(lambda ip_, call, *dims: t.permute(_ints(ip, _dims(dims))))
    if name == "broadcast":
        return method(lambda ip_, call, dim, size: t.broadcast(ip.need_int(dim), ip.need_int(size)))
    if name == "expand_dim":
        return method(lambda ip_, call, dim: t.expand_dim(ip.need_int(dim)))
    if name == "squeeze_dim":
        return method(lambda ip_, call, dim: t.squeeze_dim(ip.need_int(dim)))
    if name == "slice":
        return method(
            lambda ip_, call, dim, start, end, step=1: t.slice_dim(
                ip.need_int(dim), norm_int(start), norm_int(end), ip.need_int(step)
            )
        )
    if name == "select":

        def select(ip_, call, dim, index):
            if isinstance(index, (TensorView, Register)):
                return _dynamic_select(ip, call, t, ip.need_int(dim), index)
            return t.select(ip.need_int(dim), norm_int(index))

        return method(select)
    if name == "vector_select":
        return method(lambda ip_, call, dim, vector_offset: _vector_select(
            ip, call, t, ip.need_int(dim), vector_offset))  # fmt: skip
    if name == "reshape_dim":
        return method(lambda ip_, call, dim, shape: t.reshape_dim(
            ip.need_int(dim), _ints(ip, _dims((shape,)))))  # fmt: skip
    if name == "flatten_dims":
        return method(lambda ip_, call, start_dim, end_dim: t.flatten_dims(
            ip.need_int(start_dim), ip.need_int(end_dim)))  # fmt: skip
    if name == "rearrange":

        def rearrange(ip_, call, src_pattern, dst_pattern, fixed_sizes=None):
            sizes = {} if fixed_sizes is None else fixed_sizes
            if not isinstance(sizes, dict):
                raise UserError("err_invalid_view", "rearrange: fixed_sizes must be a dict")
            sizes = {k: ip.need_int(v, "a dimension size") for k, v in sizes.items()}
            return t.rearrange(ip.deep_concrete(src_pattern), ip.deep_concrete(dst_pattern),
                               sizes)  # fmt: skip

        return method(rearrange)
    if name == "get_pattern":
        return method(lambda ip_, call: t.get_pattern())
    if name == "is_contiguous":
        return method(lambda ip_, call: t.is_contiguous())
    if name == "is_indirect":
        return method(lambda ip_, call: t.dynamic is not None)
    if name == "ap":

        def ap(ip_, call, pattern, offset=None, scalar_offset=None, vector_offset=None,
               indirect_dim=0, dtype=None):  # fmt: skip
            if not isinstance(pattern, (list, tuple)):
                raise UserError("err_invalid_view", "ap: pattern must be a list of [step, num]")
            off = None if offset is None else norm_int(offset)
            if off is not None and not isinstance(off, int) and not is_symbolic(off):
                raise UserError(
                    "err_invalid_view", f"ap: offset must be an integer, got {_show(off)}"
                )
            view = t.ap(pattern, off, None if dtype is None else dtype_arg(dtype))
            if scalar_offset is None and vector_offset is None:
                return view
            return _dynamic_view(ip, call, t, view, scalar_offset, vector_offset, indirect_dim)

        return method(ap)
    if name == "indirect":
        return method(lambda ip_, call, index=None, num_elem=None: _indirect(
            ip, call, t, index, num_elem))  # fmt: skip
    return MISSING


def _indirect(ip, call, t: TensorView, index, num_elem) -> TensorView:
    """`t.indirect(index, num_elem=None)`: tensor indirection (NKI 0.5, NeuronCore-v4 only), a
    gather (input) or scatter (output) operand of a compute instruction. The view `(P, F)`
    becomes `(P, num_elem)`: column i is column `offset_i` of `t`, the offsets read from the
    `(P, K)` SBUF index tile in the engine's snake order when the instruction runs (checked
    per instruction by the operand rules, executed by the runtime)."""
    if not version_at_least(ip, "0.5"):
        raise UserError(
            "err_unknown_api",
            f"NkiTensor has no attribute 'indirect' in NKI {ip.language.version} (it is new in "
            "NKI 0.5)",
            call.node,
            "compile as NKI 0.5 or later (--nki 0.5)",
        )
    if ip.target in ("trn1", "trn2"):
        raise UserError(
            "err_unsupported_on_target",
            f"NkiTensor.indirect (tensor indirection) exists on trn3 only; the target is "
            f"{ip.target}",
            call.node,
            "gather the columns with nisa.dma_copy and .ap(vector_offset=...) on an HBM "
            "tensor, or compile with --target trn3",
        )
    if not t.on_chip:
        raise UserError(
            "err_unsupported_memory",
            f"indirect: tensor indirection addresses an SBUF or PSUM tensor; this one is in "
            f"{t.buffer}",
            call.node,
            "for an HBM tensor gather rows with nisa.dma_copy and .ap(vector_offset=...)",
        )
    try:
        view = t.flatten_dims(1, len(t.shape) - 1) if len(t.shape) > 2 else t
    except UserError:
        raise UserError(
            "err_invalid_view",
            f"indirect: the free dimensions of a view of shape {t.shape} and strides "
            f"{t.strides} are not contiguous, so offsets cannot index them as one dimension",
            call.node,
            "copy the data into a contiguous tile first, or index a 2-D view",
        ) from None
    if len(view.shape) != 2:
        raise UserError(
            "err_invalid_view",
            f"indirect: the view must have a partition and a free dimension, got shape {t.shape}",
            call.node,
            "add a free dimension, e.g. t.reshape((P, 1))",
        )
    where = call.arg_node(0, "index")
    if not isinstance(index, TensorView):
        raise UserError(
            "err_invalid_argument",
            f"indirect: index must be an SBUF tile of offsets, got {type_name(index)}",
            where,
            "an int32/uint32 SBUF tile of shape (P, K) with P the view's partition count",
        )
    index.static_only("an index tile of .indirect()")
    rows = view.shape[0]
    if (
        index.buffer != "sbuf"
        or index.dtype not in ("int32", "uint32")
        or len(index.shape) != 2
        or index.shape[0] != rows
    ):
        raise UserError(
            "err_invalid_argument",
            f"indirect: index must be an int32/uint32 SBUF tile of shape ({rows}, K), got "
            f"{index.dtype} {index.buffer} {index.shape}",
            where,
            f"the index tile has the view's {rows} partitions; its values are free-dimension "
            "offsets",
        )
    if num_elem is None:
        count = index.size
    else:
        count = ip.need_int(num_elem, "an integer num_elem")
    if not 1 <= count <= index.size:
        raise UserError(
            "err_invalid_argument",
            f"indirect: num_elem {count} is not in 1..{index.size} (the index tile's "
            f"{index.size} offsets)",
            call.arg_node(1, "num_elem"),
            "use at most as many offsets as the index tile holds",
        )
    (pstep, parts), (fstep, size) = view.pattern
    return TensorView(
        view.tensor,
        view.offset,
        ((pstep, parts), (fstep, count)),
        view.dtype,
        ("indirect", index, 1, fstep, size),
    )


def _whole_rows(t: TensorView, dim: int, what: str, call) -> None:
    """A runtime index along `dim` of an HBM view moves it by whole steps of the tensor's
    dimension `dim` (the view's dimension must be the tensor's, unpermuted)."""
    shape = t.tensor.shape
    row = 1
    for d in shape[dim + 1 :]:
        row *= d
    if t.on_chip or dim >= len(shape) or len(t.pattern) != len(shape) or t.pattern[dim][0] != row:
        raise UserError(
            "err_unsupported_api",
            f"{what} with a runtime index is supported by nkic on an HBM tensor whose "
            f"dimension {dim} is the tensor's own (not permuted or reshaped)",
            call.node,
            "apply it to the HBM tensor (or a slice of it) before other views",
        )


def _dynamic_select(ip, call, t: TensorView, dim: int, index) -> TensorView:
    """`t.select(dim, idx_tile)`: the runtime index idx moves the view by idx steps of
    dimension `dim`, which the result drops (a `.ap(scalar_offset=, indirect_dim=dim)`)."""
    t.static_only("a dynamic select")
    dim = t._dim(dim)
    _whole_rows(t, dim, "NkiTensor.select", call)
    kept = t.index(tuple(0 if d == dim else slice(None) for d in range(len(t.pattern))))
    kept = TensorView(t.tensor, t.offset, kept.pattern, t.dtype)
    return _dynamic_view(ip, call, t, kept, index, None, dim)


def _vector_select(ip, call, t: TensorView, dim: int, offsets) -> TensorView:
    """`t.vector_select(0, offsets)`: partition p reads row offsets[p] of dimension 0 (a
    gather, `.ap(vector_offset=offsets)`)."""
    t.static_only("vector_select")
    if dim != 0:
        raise UserError(
            "err_invalid_argument", f"vector_select: dim must be 0, got {dim}", call.node
        )
    if t.on_chip:
        raise UserError(
            "err_invalid_argument",
            f"vector_select is only supported on HBM tensors; this one is in {t.buffer}",
            call.node,
        )
    if not isinstance(offsets, TensorView):
        raise UserError(
            "err_invalid_argument",
            f"vector_select: vector_offset must be an SBUF index tile, got {type_name(offsets)}",
            call.node,
        )
    _whole_rows(t, 0, "NkiTensor.vector_select", call)
    rows = offsets.shape[0]
    view = TensorView(t.tensor, t.offset, [(t.pattern[0][0], rows), *t.pattern[1:]], t.dtype)
    return _dynamic_view(ip, call, t, view, None, offsets, 0)


def _dynamic_view(
    ip, call, base: TensorView, view: TensorView, scalar_offset, vector_offset, indirect_dim
):
    """`view` (`base.ap(...)`) with the runtime offset of `.ap(scalar_offset=…)` /
    `.ap(vector_offset=…)`; one index unit moves by the step of `base`'s dimension
    `indirect_dim` (a row of the tensor, or one element of a reshape to 1-D)
    (Language §8): checked here, bound to a DMA operand by the instruction."""
    if scalar_offset is not None and vector_offset is not None:
        raise UserError(
            "err_invalid_argument",
            "ap: scalar_offset and vector_offset are mutually exclusive",
            call.arg_node(name="vector_offset"),
        )
    kind, index = (
        ("vector", vector_offset) if vector_offset is not None else ("scalar", scalar_offset)
    )
    where = call.arg_node(name=f"{kind}_offset")
    dim = ip.need_int(indirect_dim, "an integer indirect_dim")
    if isinstance(index, Register) and kind == "scalar":
        index = index.view()  # a register: the offset the sequencer computed
    elif not isinstance(index, TensorView):
        raise UserError(
            "err_unsupported_api",
            f"ap: {kind}_offset must be an SBUF index tile in nkic, got {type_name(index)}",
            where,
            "an int32 SBUF tile of shape (1, 1), a register (nisa.register_alloc) or an NkiScalar",
        )
    rows = view.pattern[0][1]
    want = (rows, 1) if kind == "vector" else (1, 1)
    # one index per partition (vector) or one index (scalar); unit dims after the first do not
    # change which element holds it, so (P, 1, 1) is the (P, 1) index tile
    shape = index.shape if len(index.shape) >= 2 and set(index.shape[1:]) == {1} else None
    if index.buffer == "reg":
        pass
    elif (
        index.buffer != "sbuf"
        or index.dtype not in ("int32", "uint32")
        or shape is None
        or shape[0] != want[0]
    ):
        raise UserError(
            "err_invalid_argument",
            f"ap: {kind}_offset must be an int32/uint32 SBUF tile of shape {want} (more "
            f"trailing 1s allowed), got {index.dtype} {index.buffer} {index.shape}",
            where,
            "one row index per element of the pattern's first dimension"
            if kind == "vector"
            else "a single index",
        )
    if view.on_chip:
        raise UserError(
            "err_unsupported_api",
            f"ap: a dynamic offset on an {view.buffer} tensor is not supported by nkic; "
            "only on HBM tensors (DMA gather/scatter)",
            where,
        )
    if not 0 <= dim < len(base.shape) or (kind == "vector" and dim != 0):
        raise UserError(
            "err_invalid_argument",
            f"ap: indirect_dim {dim} is not supported here"
            + (" (vector_offset supports only indirect_dim=0)" if kind == "vector" else ""),
            call.arg_node(name="indirect_dim"),
        )
    unit = base.strides[dim] * DTYPES[base.dtype].itemsize // DTYPES[view.dtype].itemsize
    return TensorView(view.tensor, view.offset, view.pattern, view.dtype, (kind, index, dim, unit))


def _dims(args: tuple):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _ints(ip, xs):
    return tuple(ip.need_int(x) for x in xs)


def constant_attribute(ip, obj, name: str):
    """Attributes of NKI constants: `nisa.engine.vector`, `t.buffer.name`, …"""
    if isinstance(obj, IsaEnum):
        members = dict(obj.members)
        if name in members:
            return IsaEnumMember(obj.name, name, members[name])
        raise UserError(
            "err_unknown_api",
            f"nisa.{obj.name} has no member '{name}'",
            None,
            _did_you_mean(name, members) or "members: " + ", ".join(members),
        )
    if isinstance(obj, IsaEnumMember) and name in ("name", "value"):
        return getattr(obj, name)
    if isinstance(obj, BufferValue) and name == "name":
        return obj.name
    if isinstance(obj, NlOp) and name == "__name__":
        return obj.name
    return MISSING


def jit(ip, call, fn=None, **kwargs):
    """`@nki.jit` / `nki.jit(...)(fn)`: marks the function as a kernel."""

    def mark(ip_, call_, f):
        if isinstance(f, Function):
            f.is_jit = True
        return f

    if fn is None:
        return Builtin("nki.jit", mark)
    return mark(ip, call, fn)
