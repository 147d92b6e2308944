"""The example kernels, compiled and run end to end, against numpy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkic

from .references import matmul, softmax, tensor_add

BF16 = ml_dtypes.bfloat16


def rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(128, 512), (64, 256), (1, 7)])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16])
def test_tensor_add_matches_numpy(examples, shape, dtype):
    a, b = rand(shape, dtype, 1), rand(shape, dtype, 2)
    kernel = nkic.compile(str(examples / "tensor_add.py"), a, b)
    got = kernel(a, b)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float32), tensor_add(a, b))


@pytest.mark.parametrize(("shape", "dtype"), [((256, 512), np.float32), ((512, 128), BF16)])
def test_tiled_add_matches_numpy(shape, dtype):
    from tiled_add import tiled_add

    a, b = rand(shape, dtype, 3), rand(shape, dtype, 4)
    got = nkic.compile(tiled_add, a, b)(a, b)
    np.testing.assert_array_equal(got.astype(np.float32), tensor_add(a, b))


@pytest.mark.parametrize(
    ("K", "M", "N", "dtype", "rtol"),
    [
        (128, 128, 512, np.float32, 1e-5),
        (256, 256, 1024, np.float32, 1e-5),
        (384, 128, 512, BF16, 1e-2),
    ],
)
def test_matmul_tiled_matches_numpy(K, M, N, dtype, rtol):
    from matmul_tiled import matmul_tiled

    lhsT, rhs = rand((K, M), dtype, 5), rand((K, N), dtype, 6)
    got = nkic.compile(matmul_tiled, lhsT, rhs)(lhsT, rhs).astype(np.float32)
    want = matmul(lhsT, rhs)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize(
    ("shape", "dtype", "tol"),
    [((128, 64), np.float32, 1e-6), ((256, 512), np.float32, 1e-5), ((128, 256), BF16, 1e-2)],
)
def test_softmax_matches_numpy(shape, dtype, tol):
    from softmax import softmax as softmax_kernel

    x = rand(shape, dtype, 7) * 4
    x = x.astype(dtype)
    got = nkic.compile(softmax_kernel, x)(x).astype(np.float32)
    np.testing.assert_allclose(got, softmax(x), rtol=tol, atol=tol)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=5 * tol)


def test_compiled_kernel_saves_and_loads(tmp_path, examples):
    a, b = rand((128, 64), np.float32, 8), rand((128, 64), np.float32, 9)
    kernel = nkic.compile(str(examples / "tensor_add.py"), a, b)
    kernel.save(tmp_path / "k.neff")
    again = nkic.load(tmp_path / "k.neff")
    np.testing.assert_array_equal(again(a, b), kernel(a, b))
    assert "dma_copy" in kernel.ir and "tensor_tensor" in kernel.asm
    assert kernel.profile["engines"]["vector"]["instructions"] == 1
