"""Independent numpy references for the example kernels, written from their definitions."""

from __future__ import annotations

import ml_dtypes
import numpy as np


def round_to(x: np.ndarray, dtype) -> np.ndarray:
    """Round float32 values to `dtype` (nearest even) and back to float32."""
    return np.asarray(x, np.float32).astype(dtype).astype(np.float32)


def tensor_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # The Vector engine adds in fp32 and rounds once to the output dtype.
    return round_to(a.astype(np.float32) + b.astype(np.float32), a.dtype)


def matmul(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    # fp32 accumulation of exact products of the (already rounded) inputs, rounded to the
    # output dtype once at the end.
    acc = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return round_to(acc.astype(np.float32), lhsT.dtype)


def softmax(x: np.ndarray) -> np.ndarray:
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    return round_to((e / e.sum(axis=1, keepdims=True)).astype(np.float32), x.dtype)


BF16 = ml_dtypes.bfloat16
