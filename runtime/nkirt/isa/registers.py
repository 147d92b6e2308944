"""Semantics of the engine sequencers' register instructions (`reg` tensors: one signed 32-bit
value each, or a 64-bit pair for an `nl.int64` NkiScalar). Arithmetic wraps around at the
register's width, as NkiScalar's does
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.NkiScalar.html)."""

from __future__ import annotations

import numpy as np

from nkirt.isa.operands import dtype_of
from nkirt.isa.registry import semantics

_ALU = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
}


def _value(v) -> int:
    """The integer an operand holds (an immediate, or a one-element array)."""
    return int(np.asarray(v).reshape(-1)[0])


def _register(value: int, attrs) -> np.ndarray:
    """`value` wrapped to the destination register: signed 32-bit, or 64-bit for an int64
    NkiScalar."""
    bits = 64 if attrs.get("_dtypes", {}).get("dst") == "int64" else 32
    wrapped = (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return np.array([wrapped], np.int64 if bits == 64 else np.int32)


@semantics("register_move")
def register_move(ctx, ops, attrs):
    return {"dst": _register(_value(ops["src"]), attrs)}


@semantics("register_load")
def register_load(ctx, ops, attrs):
    return {"dst": _register(_value(ops["src"]), attrs)}


@semantics("register_store")
def register_store(ctx, ops, attrs):
    out = np.asarray(ops["src"]).reshape(-1)[:1]
    dst = dtype_of("dst", ops, attrs, default="int32")
    return {"dst": out.astype(np.int64).astype(np.dtype(dst))}


@semantics("register_alu")
def register_alu(ctx, ops, attrs):
    op = attrs["op"]
    if op not in _ALU:
        raise ValueError(f"register_alu: unsupported op {op!r}")
    return {"dst": _register(_ALU[op](_value(ops["data0"]), _value(ops["data1"])), attrs)}
