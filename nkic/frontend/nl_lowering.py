"""Lowerings of `nki.language` convenience calls to `nki.isa` instructions.

Each entry of `LOWERINGS` implements one `nl.<name>(...)` call as `fn(interp, call, *args,
**kwargs)`; it allocates its result with `nki_api._ndarray` and emits instructions with
`nki_api.emit_isa`. A name registered here that is also an ALU operator or activation
(`nl.exp`) stays usable as an `op=` value; calling it reaches the lowering.
"""

from __future__ import annotations

from ..ir.types import DTYPES

LOWERINGS: dict[str, object] = {}


def lowering(name: str):
    def register(fn):
        LOWERINGS[name] = fn
        return fn

    return register


def _fill_value(dtype: str, value):
    return int(value) if DTYPES[dtype].is_int else float(value)


def _filled(ip, call, shape, dtype, buffer, name, value):
    from .nki_api import SBUF, _ndarray, emit_isa

    tile = _ndarray(ip, call, shape, dtype, SBUF if buffer is None else buffer, name)
    value = ip.need_concrete(value, "a fill value")
    emit_isa(ip, "memset", {"dst": tile, "value": _fill_value(tile.dtype, value)}, {}, call)
    return tile


@lowering("zeros")
def zeros(ip, call, shape, dtype, buffer=None, name=""):
    """`nl.zeros`: allocate, then `memset(value=0)`."""
    return _filled(ip, call, shape, dtype, buffer, name, 0)


@lowering("ones")
def ones(ip, call, shape, dtype, buffer=None, name=""):
    return _filled(ip, call, shape, dtype, buffer, name, 1)


@lowering("full")
def full(ip, call, shape, fill_value, dtype, buffer=None, name=""):
    if not isinstance(fill_value, (int, float)):
        from .values import UserError

        raise UserError("err_invalid_argument", "nl.full fill_value must be a number")
    return _filled(ip, call, shape, dtype, buffer, name, fill_value)


@lowering("zeros_like")
def zeros_like(ip, call, x, dtype=None, buffer=None, name=""):
    from .nki_api import BufferValue, TensorView
    from .values import UserError

    if not isinstance(x, TensorView):
        raise UserError("err_invalid_argument", "nl.zeros_like expects a tensor")
    buf = BufferValue(x.buffer) if buffer is None else buffer
    return _filled(ip, call, x.shape, x.dtype if dtype is None else dtype, buf, name, 0)
