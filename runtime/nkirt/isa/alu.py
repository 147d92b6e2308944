"""The ALU operator table of ISA §2, shared by every Vector/Scalar/GpSimd instruction.

Arithmetic operators take and return float32; bitvec operators work on raw bits (uint64,
zero-extended from each operand's width); GpSimd integer operators are exact with 32-bit
wraparound.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

F32 = np.float32


def _flag(condition) -> np.ndarray:
    return np.asarray(condition).astype(F32)


def _truth(x) -> np.ndarray:
    return np.asarray(x) != 0


def _power(x, y):
    with np.errstate(all="ignore"):
        return np.power(np.float64(x), np.float64(y)).astype(F32)


def _abs_max(x, y):
    return np.where(np.abs(x) > np.abs(y), x, y).astype(F32)


def _abs_min(x, y):
    return np.where(np.abs(x) < np.abs(y), x, y).astype(F32)


def _rsqrt(x):
    with np.errstate(all="ignore"):
        return (1.0 / np.sqrt(np.float64(x))).astype(F32)


def _reciprocal(x):
    with np.errstate(all="ignore"):
        return (F32(1) / np.asarray(x, dtype=F32)).astype(F32)


#: Binary arithmetic operators on fp32 values.
ARITHMETIC: dict[str, Callable] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": lambda x, y: _flag(x == y),
    "not_equal": lambda x, y: _flag(x != y),
    "greater_equal": lambda x, y: _flag(x >= y),
    "greater": lambda x, y: _flag(x > y),
    "less_equal": lambda x, y: _flag(x <= y),
    "less": lambda x, y: _flag(x < y),
    "logical_and": lambda x, y: _flag(_truth(x) & _truth(y)),
    "logical_or": lambda x, y: _flag(_truth(x) | _truth(y)),
    "logical_xor": lambda x, y: _flag(_truth(x) ^ _truth(y)),
    "power": _power,
    "abs_max": _abs_max,
    "abs_min": _abs_min,
}

#: Unary arithmetic operators (their second operand is `None` or 0 and ignored).
UNARY: dict[str, Callable] = {
    "abs": np.abs,
    "square": lambda x: np.multiply(x, x),
    "relu": lambda x: np.maximum(x, F32(0)),
    "rsqrt": _rsqrt,
    "reciprocal": _reciprocal,
    "logical_not": lambda x: _flag(~_truth(x)),
}

BITVEC = frozenset(
    {"invert", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
)

#: Reduction-legal operators and the identity their accumulator starts from.
REDUCE_IDENTITY: dict[str, float] = {
    "add": 0.0,
    "subtract": 0.0,
    "multiply": 1.0,
    "maximum": -np.inf,
    "minimum": np.inf,
    "logical_and": 1.0,
    "logical_or": 0.0,
    "logical_xor": 0.0,
    "abs_max": 0.0,
    "abs_min": np.inf,
}

BITVEC_REDUCE = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}

#: ufuncs whose `reduce` matches a sequential fold (order matters only for these).
SEQUENTIAL = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


def is_unary(op: str) -> bool:
    return op in UNARY or op == "invert"


def arithmetic(op: str, x, y=None, instruction: str = "alu", scratch=None) -> np.ndarray:
    """`x op y` in fp32 (`y` ignored for unary operators). With `scratch` (`nkirt.scratch`),
    an operator that is a numpy ufunc writes its result into one of its temporaries: `x` itself
    when it is one (the caller's intermediate value, not used after this step)."""
    x = np.asarray(x, dtype=F32)
    with np.errstate(all="ignore"):
        if op in UNARY:
            fn = UNARY[op]
            if scratch is not None and isinstance(fn, np.ufunc):
                return fn(x, out=x if scratch.owns(x) else scratch.empty(x.shape, F32))
            return np.asarray(fn(x), dtype=F32)
        if op in ARITHMETIC:
            if y is None:
                raise ValueError(f"{instruction}: op {op!r} needs a second operand")
            y = np.asarray(y, dtype=F32)
            fn = ARITHMETIC[op]
            if scratch is not None and isinstance(fn, np.ufunc):
                shape = np.broadcast_shapes(x.shape, y.shape)
                in_place = shape == x.shape and scratch.owns(x)
                return fn(x, y, out=x if in_place else scratch.empty(shape, F32))
            return np.asarray(fn(x, y), dtype=F32)
    raise ValueError(f"{instruction}: unsupported arithmetic op {op!r}")


def bitvec(op: str, x: np.ndarray, y=None, instruction: str = "alu") -> np.ndarray:
    """`x op y` on raw bits (uint64 in, uint64 out; the caller truncates to the dst width).
    Shifts by 64 or more give 0; `right_shift` is logical."""
    x = np.asarray(x, dtype=np.uint64)
    if op == "invert":
        return ~x
    y = np.asarray(y, dtype=np.uint64)
    if op == "bitwise_and":
        return x & y
    if op == "bitwise_or":
        return x | y
    if op == "bitwise_xor":
        return x ^ y
    if op in ("left_shift", "right_shift"):
        amount = np.minimum(y, np.uint64(63))
        shifted = x << amount if op == "left_shift" else x >> amount
        return np.where(y > np.uint64(63), np.uint64(0), shifted)
    raise ValueError(f"{instruction}: unsupported bitvec op {op!r}")


_INT32_WRAP = 1 << 32

#: GpSimd exact integer operators on int64 values (wrapped to 32 bits by `integer`).
_INTEGER: dict[str, Callable] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": lambda x, y: (x == y).astype(np.int64),
    "not_equal": lambda x, y: (x != y).astype(np.int64),
    "greater_equal": lambda x, y: (x >= y).astype(np.int64),
    "greater": lambda x, y: (x > y).astype(np.int64),
    "less_equal": lambda x, y: (x <= y).astype(np.int64),
    "less": lambda x, y: (x < y).astype(np.int64),
    "logical_and": lambda x, y: ((x != 0) & (y != 0)).astype(np.int64),
    "logical_or": lambda x, y: ((x != 0) | (y != 0)).astype(np.int64),
    "logical_xor": lambda x, y: ((x != 0) ^ (y != 0)).astype(np.int64),
}


def has_integer_form(op: str, y) -> bool:
    """Whether GpSimd computes `op` exactly on integers (power only for exponents >= 0)."""
    if op == "power":
        return bool(np.all(np.asarray(y) >= 0))
    return op in _INTEGER


def integer(op: str, x: np.ndarray, y: np.ndarray, signed: bool) -> np.ndarray:
    """`x op y` on int64 values, wrapped to a 32-bit signed or unsigned result (int64)."""
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    if op == "power":
        result = _integer_power(x, y)
    else:
        result = _INTEGER[op](x, y)
    return wrap32(result, signed)


def wrap32(values, signed: bool) -> np.ndarray:
    """int64 `values` modulo 2**32, as signed or unsigned 32-bit values (int64)."""
    wrapped = np.asarray(values).astype(np.int64) % _INT32_WRAP
    if signed:
        wrapped = np.where(wrapped >= _INT32_WRAP // 2, wrapped - _INT32_WRAP, wrapped)
    return wrapped


def _integer_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    base, exponent = np.broadcast_arrays(base % _INT32_WRAP, exponent)
    result = np.ones(base.shape, dtype=np.int64)
    base = base.copy()
    exponent = exponent.copy()
    while np.any(exponent > 0):
        odd = (exponent & 1) == 1
        result = np.where(odd, (result * base) % _INT32_WRAP, result)
        base = (base * base) % _INT32_WRAP
        exponent >>= 1
    return result
