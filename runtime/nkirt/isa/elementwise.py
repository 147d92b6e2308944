"""Semantics of the elementwise ALU instructions: tensor_tensor, tensor_scalar,
scalar_tensor_tensor and reciprocal."""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa import alu
from nkirt.isa.operands import dtype_of, fp32, from_bits, param, raw_bits, scalar_or_column
from nkirt.isa.registry import semantics

_WORD_INTEGERS = frozenset({"int32", "uint32"})


def stage(op, value, operand, reverse: bool, instruction: str, scratch=None):
    """One ALU stage of a pipeline: `value op operand` (`operand op value` if reversed);
    `bypass` (or no op) passes `value` through. `scratch`: as in `alu.arithmetic`."""
    if op is None or op == "bypass":
        return value
    if alu.is_unary(op) or not reverse:
        return alu.arithmetic(op, value, operand, instruction, scratch)
    return alu.arithmetic(op, operand, value, instruction, scratch)


def bitvec_stage(op, value, operand, reverse: bool, instruction: str):
    """`stage` on raw bits."""
    if op is None or op == "bypass":
        return value
    if reverse and op != "invert":
        return alu.bitvec(op, operand, value, instruction)
    return alu.bitvec(op, value, operand, instruction)


def _column_bits(value, ndim: int):
    bits = raw_bits(value)
    if isinstance(value, np.ndarray):
        return bits.reshape((value.shape[0],) + (1,) * (ndim - 1))
    return bits


def _uses_gpsimd_integers(ops, attrs, operands) -> bool:
    """Whether the op runs as exact 32-bit integer arithmetic on GpSimd: all operands and dst
    are int32/uint32 and the engine is GpSimd or left to the default (ISA §5.3)."""
    if (attrs.get("engine") or "unknown") not in ("gpsimd", "unknown"):
        return False
    names = {dtype_of(name, ops, attrs) for name in operands}
    names.add(dtype_of("dst", ops, attrs, default=dtype_of(operands[0], ops, attrs)))
    return names <= _WORD_INTEGERS


def _integer_result(values: np.ndarray, dst_dtype: str) -> np.ndarray:
    if dst_dtype in _WORD_INTEGERS:
        return from_bits(values.astype(np.uint64), dst_dtype)
    return dtypes.cast(values, dst_dtype)


@semantics("tensor_tensor")
def tensor_tensor(ctx, ops, attrs):
    op = attrs["op"]
    data1, data2 = ops["data1"], ops["data2"].reshape(ops["data1"].shape)
    dst_dtype = dtype_of("dst", ops, attrs, default=dtype_of("data1", ops, attrs))
    if op in alu.BITVEC:
        bits = alu.bitvec(op, raw_bits(data1), raw_bits(data2), "tensor_tensor")
        return {"dst": from_bits(bits, dst_dtype)}
    if alu.has_integer_form(op, data2) and _uses_gpsimd_integers(ops, attrs, ("data1", "data2")):
        signed = dtype_of("data1", ops, attrs) == "int32"
        values = alu.integer(op, data1.astype(np.int64), data2.astype(np.int64), signed)
        return {"dst": _integer_result(values, dst_dtype)}
    x = fp32("data1", ops, attrs, ctx.scratch)
    y = dtypes.to_fp32(data2, dtype_of("data2", ops, attrs), ctx.scratch)
    return {"dst": alu.arithmetic(op, x, y, "tensor_tensor", ctx.scratch)}


def _check_op_classes(instruction: str, op0, op1) -> bool:
    """Whether the pipeline is bitvec; op0 and op1 must be of the same class."""
    bitvec0 = op0 in alu.BITVEC
    if op1 not in (None, "bypass") and (op1 in alu.BITVEC) != bitvec0:
        raise ValueError(f"{instruction}: op0 {op0!r} and op1 {op1!r} mix bitvec and arithmetic")
    return bitvec0


@semantics("tensor_scalar")
def tensor_scalar(ctx, ops, attrs):
    data = ops["data"]
    op0, op1 = attrs["op0"], attrs.get("op1")
    operand0 = param("operand0", ops, attrs, None)
    operand1 = param("operand1", ops, attrs, None)
    reverse0, reverse1 = attrs.get("reverse0", False), attrs.get("reverse1", False)
    if _check_op_classes("tensor_scalar", op0, op1):
        dst_dtype = dtype_of("dst", ops, attrs, default=dtype_of("data", ops, attrs))
        value = bitvec_stage(
            op0, raw_bits(data), _operand_bits(operand0, data.ndim), reverse0, "tensor_scalar"
        )
        value = bitvec_stage(
            op1, value, _operand_bits(operand1, data.ndim), reverse1, "tensor_scalar"
        )
        return {"dst": from_bits(value, dst_dtype)}
    scratch = ctx.scratch
    value = fp32("data", ops, attrs, scratch)
    operand0 = _operand(operand0, "operand0", ops, attrs, data.ndim)
    value = stage(op0, value, operand0, reverse0, "tensor_scalar", scratch)
    operand1 = _operand(operand1, "operand1", ops, attrs, data.ndim)
    value = stage(op1, value, operand1, reverse1, "tensor_scalar", scratch)
    return {"dst": value}


def _operand_bits(operand, ndim: int):
    return None if operand is None else _column_bits(operand, ndim)


def _operand(operand, name: str, ops, attrs, ndim: int):
    if operand is None:
        return None
    if isinstance(operand, np.ndarray):
        operand = dtypes.to_fp32(operand, dtype_of(name, ops, attrs))
    return scalar_or_column(operand, ndim)


@semantics("scalar_tensor_tensor")
def scalar_tensor_tensor(ctx, ops, attrs):
    data = ops["data"]
    operand0 = _operand(param("operand0", ops, attrs), "operand0", ops, attrs, data.ndim)
    scratch = ctx.scratch
    operand1 = dtypes.to_fp32(ops["operand1"], dtype_of("operand1", ops, attrs), scratch)
    value = fp32("data", ops, attrs, scratch)
    reverse0, reverse1 = attrs.get("reverse0", False), attrs.get("reverse1", False)
    value = stage(attrs["op0"], value, operand0, reverse0, "scalar_tensor_tensor", scratch)
    operand1 = operand1.reshape(data.shape)
    value = stage(attrs["op1"], value, operand1, reverse1, "scalar_tensor_tensor", scratch)
    return {"dst": value}


@semantics("reciprocal")
def reciprocal(ctx, ops, attrs):
    return {"dst": alu.arithmetic("reciprocal", fp32("data", ops, attrs))}
