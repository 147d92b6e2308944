"""`nl` reductions, softmax and rms_norm compiled and run against numpy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkic

from .kernels import reduction, rms_norm, softmax

BF16 = ml_dtypes.bfloat16


def rand(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def run(kernel, *arrays, **consts):
    return nkic.compile(kernel, *arrays, **consts)(*arrays)


REDUCTIONS = {
    "sum": np.sum,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "prod": np.prod,
    "var": np.var,
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize(
    ("shape", "axis", "dtype"),
    [((128, 64), 1, np.float32), ((37, 6, 5), (1, 2), np.float32), ((20, 3, 8), -1, BF16)],
)
def test_reductions_over_trailing_free_axes(name, shape, axis, dtype):
    x = rand(shape, 1, 0.5, 1.5).astype(dtype)  # prod stays in range
    keep = name == "var"  # var always keeps the reduced dimensions
    got = run(reduction, x, name=name, axis=axis, keepdims=keep)
    want = REDUCTIONS[name](x.astype(np.float64), axis=axis, keepdims=keep)
    if want.ndim == 1:
        want = want[:, None]  # a tile stays 2-D
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)


def test_keepdims_and_dtype():
    x = rand((32, 4, 8), 2)
    got = run(reduction, x, name="sum", axis=2, keepdims=True, dtype="bfloat16")
    assert got.shape == (32, 4, 1) and got.dtype == BF16
    np.testing.assert_allclose(got.astype(np.float32), x.sum(2, keepdims=True), rtol=1e-2)
    assert run(reduction, x, name="max", axis=2).shape == (32, 4)


def test_all_is_one_where_every_element_is_nonzero():
    x = np.ones((16, 8), np.float32)
    x[3, 5] = 0.0
    got = run(reduction, x, name="all", axis=1)
    np.testing.assert_array_equal(got[:, 0], np.all(x != 0, axis=1).astype(np.float32))


def reference_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("shape", "axis", "dtype"),
    [((128, 64), -1, np.float32), ((40, 4, 16), (1, 2), np.float32), ((40, 4, 16), 2, BF16)],
)
def test_softmax(shape, axis, dtype):
    x = (rand(shape, 3) * 3).astype(dtype)
    got = run(softmax, x, axis=axis).astype(np.float32)
    tol = 1e-6 if dtype == np.float32 else 1e-2
    np.testing.assert_allclose(got, reference_softmax(x.astype(np.float64), axis), atol=tol)


@pytest.mark.parametrize(("rows", "dtype"), [(128, np.float32), (45, BF16)])
@pytest.mark.parametrize("shared_weight", [False, True])
def test_rms_norm(rows, dtype, shared_weight):
    x = rand((rows, 96), 4).astype(dtype)
    w = rand((1 if shared_weight else rows, 96), 5).astype(dtype)
    got = run(rms_norm, x, w, n=96, epsilon=1e-5).astype(np.float32)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = x64 / np.sqrt((x64**2).sum(axis=1, keepdims=True) / 96 + 1e-5) * w64
    tol = 1e-5 if dtype == np.float32 else 3e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_every_instruction_of_a_lowering_carries_the_calls_location():
    from nkic.driver import compile_file
    from nkic.frontend import TensorSpec

    from . import kernels

    res = compile_file(kernels.__file__, "softmax", {"a": TensorSpec((64, 32))}, emit=False)
    source = open(kernels.__file__).read().splitlines()
    lines = {i.loc.line for i in res.ir.instructions() if i.opcode != "dma_copy"}
    assert [source[n - 1].strip() for n in lines] == [
        "return _out(nl.softmax(nl.load(a), axis=axis))"
    ]
    assert len([i for i in res.ir.instructions() if i.opcode != "dma_copy"]) == 6
