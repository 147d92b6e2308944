"""The default matmul (one BLAS product) against the PE array's in-order fp32 sum.

Both add the same products (exact in fp32 for 16-bit and 8-bit inputs); only the order of the
K additions differs, so each result lies within the classic summation bound of the other:
|fast - exact| <= 2 (K - 1) u sum_k |s_k m_k| with u = 2^-24 (docs/numerics.md).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

from .conftest import make_ctx

U = 2.0**-24


def matmul(stationary, moving, exact: bool) -> np.ndarray:
    ops = {"stationary": stationary, "moving": moving, "dst": np.zeros((128, 512), np.float32)}
    return SEMANTICS["nc_matmul"].fn(make_ctx(exact=exact), ops, {"accumulate": False})["dst"]


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3, np.float32]
)
def test_fast_and_in_order_sums_agree_within_the_summation_bound(dtype):
    rng = np.random.default_rng(7)
    s = rng.standard_normal((128, 128)).astype(dtype)
    m = rng.standard_normal((128, 512)).astype(dtype)
    fast, exact = matmul(s, m, False), matmul(s, m, True)
    magnitude = np.abs(s.astype(np.float64)).T @ np.abs(m.astype(np.float64))
    bound = 2 * 127 * U * magnitude
    assert np.all(np.abs(fast.astype(np.float64) - exact) <= bound)
    # and both are close to the exact real sum (float64 holds every product exactly)
    real = s.astype(np.float64).T @ m.astype(np.float64)
    assert np.all(np.abs(fast - real) <= 127 * U * magnitude + 1e-30)


def test_bf16_products_are_exact_so_only_the_order_differs():
    rng = np.random.default_rng(3)
    s = rng.standard_normal((1, 128)).astype(ml_dtypes.bfloat16)
    m = rng.standard_normal((1, 512)).astype(ml_dtypes.bfloat16)
    s = np.repeat(s, 128, axis=0)[:128]
    m = np.repeat(m, 128, axis=0)[:128]
    s[1:] = 0  # one nonzero product per output: no summation at all
    np.testing.assert_array_equal(matmul(s, m, False), matmul(s, m, True))


def test_specials_propagate_on_the_fast_path():
    s = np.zeros((128, 128), np.float32)
    m = np.zeros((128, 512), np.float32)
    s[0, 0], m[0, 0] = np.inf, 1.0
    s[1, 1], m[1, 1] = np.nan, 1.0
    s[2, 2], m[2, 2] = np.inf, 0.0
    fast = matmul(s, m, False)
    assert np.isposinf(fast[0, 0]) and np.isnan(fast[1, 1]) and np.isnan(fast[2, 2])
