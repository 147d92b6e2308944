"""Numpy references for NKI Library kernels, written here from each kernel's documented
semantics. Each takes the input tensors and the host values of a case (by argument name) and
returns the expected output (or a tuple of outputs, in the kernel's return order)."""

from __future__ import annotations

import numpy as np


def cumsum(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Inclusive prefix sum along `axis` (default: the last)."""
    return np.cumsum(t["x"].astype(np.float64), axis=int(host.get("axis", -1)))


REFERENCES = {"cumsum": cumsum}
