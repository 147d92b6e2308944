"""Semantics of the engine sequencers' register instructions (`reg` tensors: one signed 32-bit
value each). Arithmetic wraps around at 32 bits, as NkiScalar's int32 does
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


def _int32(value: int) -> np.ndarray:
    """`value` wrapped to a signed 32-bit register."""
    wrapped = (value + (1 << 31)) % (1 << 32) - (1 << 31)
    return np.array([wrapped], np.int32)


@semantics("register_move")
def register_move(ctx, ops, attrs):
    return {"dst": _int32(_value(ops["src"]))}


@semantics("register_load")
def register_load(ctx, ops, attrs):
    return {"dst": _int32(_value(ops["src"]))}


@semantics("register_store")
def register_store(ctx, ops, attrs):
    dtype = np.asarray(ops["src"]).dtype
    out = np.asarray(ops["src"], dtype).reshape(-1)[:1]
    dst = dtype_of("dst", ops, attrs, default="int32")
    return {"dst": out.astype(np.int64).astype(np.dtype(dst))}


@semantics("register_alu")
def register_alu(ctx, ops, attrs):
    op = attrs["op"]
    if op not in _ALU:
        raise ValueError(f"register_alu: unsupported op {op!r}")
    return {"dst": _int32(_ALU[op](_value(ops["data0"]), _value(ops["data1"])))}
