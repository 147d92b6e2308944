"""`nl` data movement, Tensor Engine, selection, random-number and constant APIs compiled and
run against numpy references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkic

from . import kernels as k

BF16 = ml_dtypes.bfloat16


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run(kernel, *arrays, **consts):
    return nkic.compile(kernel, *arrays, **consts)(*arrays)


@pytest.mark.parametrize(("shape", "dtype"), [((128, 64), np.float32), ((37, 5, 3), BF16)])
def test_load_store_copy_round_trip(shape, dtype):
    x = rand(shape, 1, dtype)
    kernel = nkic.compile(k.copy_and_cast, x)
    np.testing.assert_array_equal(kernel(x), x)
    assert [op in kernel.ir for op in ("dma_copy", "tensor_copy")] == [True, True]


def test_load_and_copy_convert_dtypes():
    x = rand((64, 32), 2)
    got = run(k.load_with_dtype, x, dtype="bfloat16")
    assert got.dtype == BF16
    np.testing.assert_array_equal(got, x.astype(BF16))
    got = run(k.copy_and_cast, x, dtype="float16")
    np.testing.assert_array_equal(got, x.astype(np.float16))


@pytest.mark.parametrize("shape", [(16, 128), (32, 100)])
def test_load_transpose2d(shape):
    x = rand(shape, 3, BF16)
    np.testing.assert_array_equal(run(k.load_transposed, x), x.T)


@pytest.mark.parametrize(
    ("K", "M", "N", "dtype", "tol"),
    [(128, 128, 512, np.float32, 1e-5), (64, 37, 100, BF16, 1e-2)],
)
def test_matmul_with_transposed_x(K, M, N, dtype, tol):
    xT, y = rand((K, M), 4, dtype), rand((K, N), 5, dtype)
    got = run(k.matmul, xT, y)
    assert got.dtype == np.float32  # the PSUM accumulator's dtype
    want = xT.astype(np.float64).T @ y.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize(("shape", "dtype"), [((128, 128), np.float32), ((20, 70), BF16)])
def test_transpose_through_psum(shape, dtype):
    x = rand(shape, 6, dtype)
    np.testing.assert_array_equal(run(k.transpose, x), x.T)


@pytest.mark.parametrize(
    ("src", "dst", "dtype"),
    [
        ((64, 1), (64, 48), np.float32),  # free dimension: stride-0 view + copy
        ((1, 40), (96, 40), np.float32),  # partition dimension: ones matmul
        ((1, 3, 1), (128, 3, 300), BF16),  # both, more than 512 columns
    ],
)
def test_broadcast_to(src, dst, dtype):
    x = rand(src, 7, dtype)
    got = run(k.broadcast, x, shape=dst)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.broadcast_to(x, dst))


def test_expand_dims_is_a_view():
    x = rand((32, 8), 8)
    np.testing.assert_allclose(run(k.expand_dims, x), x, rtol=0, atol=0)


def test_gather_flattened():
    data = rand((32, 4, 16), 9)
    idx = np.random.default_rng(10).integers(0, 64, (32, 20)).astype(np.uint32)
    got = run(k.gather, data, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(data.reshape(32, 64), idx, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_where_selects_x_where_condition_is_one(dtype):
    c = np.random.default_rng(11).integers(0, 2, (48, 16)).astype(dtype)
    a, b = rand((48, 16), 12, dtype), rand((48, 16), 13, dtype)
    np.testing.assert_array_equal(run(k.where, c, a, b), np.where(c == 1.0, a, b))
    np.testing.assert_array_equal(
        run(k.where_scalar, c, a), np.where(c == 1.0, a, -1.0).astype(dtype)
    )


def test_dropout_zeroes_about_rate_of_the_elements():
    x = np.abs(rand((128, 256), 14)) + 1.0
    got = run(k.dropout, x, rate=0.3)
    kept = got != 0
    np.testing.assert_array_equal(got[kept], x[kept])
    assert 0.25 < 1 - kept.mean() < 0.35


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rand_is_uniform_in_unit_interval(dtype):
    got = nkic.compile(k.rand, shape=(128, 256), dtype=dtype)().astype(np.float32)
    assert got.shape == (128, 256) and got.min() >= 0.0 and got.max() < 1.0
    assert abs(got.mean() - 0.5) < 0.02 and len(np.unique(got)) > 64


def test_random_seed_makes_rand_reproducible():
    kernel = nkic.compile(k.rand, shape=(16, 32), dtype="float32")
    np.testing.assert_array_equal(kernel(seed=1), kernel(seed=2))


def test_shared_constant_from_a_list_and_a_npy_file(tmp_path):
    values = [[float(i + j) for j in range(8)] for i in range(16)]
    x = rand((16, 8), 15)
    kernel = nkic.compile(k.constant_table, x, values=tuple(tuple(r) for r in values))
    np.testing.assert_array_equal(kernel(x), x + np.array(values, np.float32))
    kernel.save(tmp_path / "k.neff")  # the table travels in the neff's DATA section
    np.testing.assert_array_equal(nkic.load(tmp_path / "k.neff")(x), kernel(x))
    table = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    np.save(tmp_path / "table.npy", table)
    got = run(k.constant_table, x, values=str(tmp_path / "table.npy"))
    np.testing.assert_array_equal(got, x + table)


def test_shared_constant_requested_in_a_loop_is_one_tensor():
    x = rand((128, 8), 16)
    values = tuple(tuple(float(j) for j in range(8)) for _ in range(32))
    kernel = nkic.compile(k.constant_in_loop, x, values=values)
    np.testing.assert_array_equal(kernel(x), x + np.arange(8, dtype=np.float32))
    assert kernel.ir.count('alloc shared_hbm float32[32, 8] "shared_constant" constant') == 1


@pytest.mark.parametrize(("n", "dtype"), [(128, "bfloat16"), (37, "float32"), (5, "uint8")])
def test_shared_identity_matrix(n, dtype):
    got = nkic.compile(k.identity, n=n, dtype=dtype)()
    np.testing.assert_array_equal(got.astype(np.float32), np.eye(n))


def test_shared_identity_matrix_without_dst_is_an_sbuf_tile():
    x = rand((64, 32), 18)
    kernel = nkic.compile(k.transposed_by_identity, x)
    np.testing.assert_array_equal(kernel(x), x.T)
    assert 'alloc sbuf float32[64, 64] "identity64"' in kernel.ir


def test_device_print_warns_and_the_kernel_still_runs():
    x = rand((8, 8), 17)
    diags = nkic.check(k.__file__, "printed", a=x)
    assert [(d.code, d.severity) for d in diags] == [("nkic_device_print_ignored", "warning")]
    np.testing.assert_array_equal(run(k.printed, x), x)
