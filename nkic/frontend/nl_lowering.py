"""Lowerings of `nki.language` convenience calls to `nki.isa` instructions.

Each entry of `LOWERINGS` implements one `nl.<name>(...)` call as `fn(interp, call, *args,
**kwargs)`; the Python signature of `fn` (after `interp, call`) is the API's signature, so
missing and unexpected arguments are diagnosed by the caller. A name registered here that is
also an ALU operator or activation (`nl.exp`) stays usable as an `op=` value; calling it reaches
the lowering. This module holds the registry, the argument helpers shared by the lowerings and
the creation APIs; `nl_data.py` (data movement, Tensor Engine, constants, random numbers) and
`nl_math.py` (elementwise math, reductions, softmax, rms_norm) register the rest, and
`nki_surface.py` imports both, so that the registry it reads is complete.
"""

from __future__ import annotations

from ..ir.types import DTYPES
from . import nki_api as api
from .tensors import TensorView, type_name
from .values import BufferValue, IsaEnumMember, NlOp, UserError

LOWERINGS: dict[str, object] = {}

ON_CHIP = ("sbuf", "psum")
_BUFFER_NAMES = {"sbuf": "SBUF", "psum": "PSUM", "hbm": "HBM", "shared_hbm": "shared HBM"}


def lowering(*names: str):
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return register


# ---------------------------------------------------------------------------------------------
# argument helpers: every diagnostic names the argument and points at it


def fail(code: str, message: str, call, index: int | None = None, name: str | None = None,
         hint: str | None = None) -> UserError:  # fmt: skip
    """A UserError at argument `name` (position `index`), or at the whole call."""
    node = call.arg_node(index, name) if index is not None or name is not None else call.node
    return UserError(code, message, node, hint)


def tile(call, index: int, name: str, v, fn: str, buffers=ON_CHIP) -> TensorView:
    """Argument `name` of `nl.<fn>` as a tensor in one of `buffers`."""
    if not isinstance(v, TensorView):
        raise fail(
            "err_invalid_argument",
            f"nl.{fn}: `{name}` must be a tensor, got {type_name(v)}",
            call, index, name,
        )  # fmt: skip
    if v.buffer not in buffers:
        where = " or ".join(_BUFFER_NAMES[b] for b in buffers)
        hint = {
            "hbm": "load it into SBUF with nl.load first",
            "shared_hbm": "load it into SBUF with nl.load first",
            "psum": "copy it to SBUF with nl.copy first",
            "sbuf": "store the tile to HBM with nl.store, or read it with a nisa instruction",
        }[v.buffer]
        raise fail(
            "err_unsupported_memory",
            f"nl.{fn}: `{name}` is in {_BUFFER_NAMES[v.buffer]}; it must be in {where}",
            call, index, name, hint,
        )  # fmt: skip
    return v


def number(ip, call, index: int, name: str, v, fn: str) -> int | float:
    """Argument `name` as a compile-time int or float."""
    v = ip.need_concrete(v, "a compile-time number")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise fail(
            "err_invalid_argument",
            f"nl.{fn}: `{name}` must be a tile or a number, got {type_name(v)}",
            call, index, name,
        )  # fmt: skip
    return v


def out_dtype(call, index: int, dtype, default: str) -> str:
    """The `dtype=` argument (at position `index`), `default` when None."""
    if dtype is None:
        return default
    try:
        return api.dtype_arg(dtype)
    except UserError as err:
        err.node = call.arg_node(index, "dtype")
        raise


def new_tile(ip, call, shape, dtype: str, buffer: str = "sbuf", label: str = "") -> TensorView:
    """A fresh tile (uninitialised) at the call's location."""
    return ip.alloc(tuple(shape), dtype, buffer, label, None, call)


def emit(ip, call, opcode: str, **values) -> None:
    """One `nisa.<opcode>` instruction at the call's location (defaults filled in)."""
    api.emit_isa(ip, opcode, values, {}, call)


def op(name: str) -> NlOp:
    return NlOp(name)


def engine(name: str) -> IsaEnumMember:
    from ..ir.isa import ENUMS

    return IsaEnumMember("engine", name, ENUMS["engine"][name])


def is_int(dtype: str) -> bool:
    return DTYPES[dtype].is_int


def free_size(t: TensorView) -> int:
    n = 1
    for d in t.shape[1:]:
        n *= d
    return n


def show_shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")


# ---------------------------------------------------------------------------------------------
# creation: allocate + memset


def _fill_value(dtype: str, value):
    return int(value) if DTYPES[dtype].is_int else float(value)


def _filled(ip, call, shape, dtype, buffer, name, value):
    tile_ = api.ndarray(ip, call, shape, dtype, api.SBUF if buffer is None else buffer, name)
    value = ip.need_concrete(value, "a fill value")
    emit(ip, call, "memset", dst=tile_, value=_fill_value(tile_.dtype, value))
    return tile_


@lowering("zeros")
def zeros(ip, call, shape, dtype, buffer=None, name=""):
    """`nl.zeros`: allocate, then `memset(value=0)`."""
    return _filled(ip, call, shape, dtype, buffer, name, 0)


@lowering("ones")
def ones(ip, call, shape, dtype, buffer=None, name=""):
    return _filled(ip, call, shape, dtype, buffer, name, 1)


@lowering("full")
def full(ip, call, shape, fill_value, dtype, buffer=None, name=""):
    if isinstance(fill_value, bool) or not isinstance(fill_value, (int, float)):
        raise fail(
            "err_invalid_argument", "nl.full: `fill_value` must be a number", call, 1, "fill_value"
        )
    return _filled(ip, call, shape, dtype, buffer, name, fill_value)


@lowering("zeros_like")
def zeros_like(ip, call, x, dtype=None, buffer=None, name=""):
    if not isinstance(x, TensorView):
        raise fail("err_invalid_argument", "nl.zeros_like expects a tensor", call, 0, "x")
    buf = BufferValue(x.buffer) if buffer is None else buffer
    return _filled(ip, call, x.shape, x.dtype if dtype is None else dtype, buf, name, 0)
