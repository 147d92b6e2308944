"""Reading instruction operands: NKI dtypes, fp32 views, immediates and per-partition scalars."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nkirt import dtypes

_MISSING = object()


def dtype_of(operand: str, ops: Mapping[str, Any], attrs: Mapping[str, Any], default=None) -> str:
    """The NKI dtype of `operand`: as declared in `attrs["_dtypes"]`, else inferred from its
    array's storage dtype or its immediate's Python type, else `default`."""
    declared = attrs.get("_dtypes", {}).get(operand)
    if declared is not None:
        return declared
    value = ops.get(operand)
    if isinstance(value, np.ndarray):
        return dtypes.name_of(value.dtype)
    if isinstance(value, bool | np.bool_):
        return "uint8"
    if isinstance(value, int | np.integer):
        return "int32"
    if isinstance(value, float | np.floating):
        return "float32"
    if default is None:
        raise ValueError(f"the dtype of operand {operand!r} is unknown")
    return default


def param(name: str, ops: Mapping[str, Any], attrs: Mapping[str, Any], default=_MISSING):
    """An instruction parameter that may be an operand (tile or immediate) or an attribute."""
    if name in ops and ops[name] is not None:
        return ops[name]
    if name in attrs and attrs[name] is not None:
        return attrs[name]
    if default is _MISSING:
        raise ValueError(f"missing parameter {name!r}")
    return default


def fp32(
    operand: str, ops: Mapping[str, Any], attrs: Mapping[str, Any], scratch=None
) -> np.ndarray:
    """Operand `operand` cast to float32 (the engines' free input cast; into a temporary of
    `scratch` if given)."""
    value = param(operand, ops, attrs)
    if isinstance(value, np.ndarray):
        return dtypes.to_fp32(value, dtype_of(operand, ops, attrs), scratch)
    return np.float32(value)


def scalar_or_column(value, ndim: int):
    """An fp32 compile-time scalar, or a `(P, 1)` per-partition tile shaped to broadcast along
    the free axes of an `ndim`-dimensional tile."""
    if isinstance(value, np.ndarray):
        column = value.astype(np.float32).reshape(value.shape[0], -1)
        if column.shape[1] != 1:
            raise ValueError(f"a per-partition operand must have shape (P, 1), got {value.shape}")
        return column.reshape((value.shape[0],) + (1,) * (ndim - 1))
    return np.float32(value)


def fp32_param(name: str, ops, attrs, ndim: int, default=_MISSING):
    """Parameter `name` as an fp32 scalar or broadcastable per-partition column."""
    value = param(name, ops, attrs, default)
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = dtypes.to_fp32(value, dtype_of(name, ops, attrs))
    return scalar_or_column(value, ndim)


def rows(array: np.ndarray) -> np.ndarray:
    """`array` viewed as (partitions, free elements)."""
    return array.reshape(array.shape[0], -1)


def raw_bits(value) -> np.ndarray:
    """The raw bit pattern of each element, zero-extended to uint64 (Python ints: their
    64-bit two's complement)."""
    if isinstance(value, np.ndarray):
        unsigned = np.dtype(f"uint{value.dtype.itemsize * 8}")
        return value.view(unsigned).astype(np.uint64)
    return np.uint64(int(value) & 0xFFFFFFFFFFFFFFFF)


def from_bits(bits: np.ndarray, dtype_name: str) -> np.ndarray:
    """Truncate uint64 bit patterns to the width of `dtype_name` and reinterpret them."""
    storage = dtypes.storage_dtype(dtype_name)
    unsigned = np.dtype(f"uint{storage.itemsize * 8}")
    return np.asarray(bits).astype(unsigned).view(storage)
