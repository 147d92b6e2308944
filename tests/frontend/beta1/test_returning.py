"""Beta 1 `nki.isa` calls without `dst` return a new tile of the shape, dtype and buffer the
instruction gives; each result matches numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nkic

KERNELS = str(Path(__file__).parent / "returning_tiles.py")


def test_iota_of_an_affine_grid_expression():
    out = nkic.compile(KERNELS, kernel="iota_grid")()
    p, f = np.mgrid[0:64, 0:256]
    np.testing.assert_array_equal(out, p * 1000 + f * 3 + 7)


def test_memset_allocates_the_tile_it_fills():
    out = nkic.compile(KERNELS, kernel="memset_fill")()
    np.testing.assert_array_equal(out, np.full((32, 96), -2.5, np.float32))


def test_affine_select_with_a_grid_predicate():
    a = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="lower_triangle")(a)
    p, f = np.mgrid[0:128, 0:128]
    np.testing.assert_array_equal(out, np.where(f <= p, a, np.float32(-9.0)))


def test_activation_with_a_numpy_op_bias_scale_and_dtype():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((128, 1)).astype(np.float32)
    out = nkic.compile(KERNELS, a, b, kernel="squared_scaled")(a, b)
    want = np.square(a * 2.0 + b).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-2)


def test_bn_stats_then_bn_aggr_give_mean_and_variance():
    a = np.random.default_rng(2).standard_normal((128, 256)).astype(np.float32)
    mean, var = nkic.compile(KERNELS, a, kernel="row_stats")(a)
    np.testing.assert_allclose(mean[:, 0], a.mean(axis=1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(var[:, 0], a.var(axis=1), rtol=1e-4, atol=1e-5)


def test_tensor_reduce_with_keepdims_and_max8():
    a = np.random.default_rng(3).standard_normal((128, 64)).astype(np.float32)
    total, top = nkic.compile(KERNELS, a, kernel="reduce_and_top8")(a)
    np.testing.assert_allclose(total, a.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(top, -np.sort(-a, axis=1)[:, :8])


def test_partition_reduce_returns_one_row():
    a = np.random.default_rng(4).standard_normal((128, 32)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="column_sums")(a)
    np.testing.assert_allclose(out, a.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-4)


def test_reciprocal_then_copy_with_dtype():
    a = np.random.default_rng(5).uniform(1.0, 2.0, (128, 64)).astype(np.float16)
    out = nkic.compile(KERNELS, a, kernel="scaled_copy")(a)
    np.testing.assert_allclose(out, 1.0 / a.astype(np.float32), rtol=2e-3)


@pytest.mark.parametrize(
    ("source", "code", "text"),
    [
        ("t = nisa.iota(nl.arange(8)[None, :])", "err_missing_argument", "'dtype'"),
        ("t = nisa.affine_select(pred=a, on_true_tile=x, on_false_value=0.0)",
         "err_invalid_argument", "must compare two index-grid"),
        ("t = nisa.memset(shape=(4, 4), value=1.0)", "err_missing_argument", "dtype"),
    ],
)  # fmt: skip
def test_returning_forms_misused_are_diagnostics(tmp_path, source, code, text):
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
        "    x = nl.load(a)\n"
        f"    {source}\n"
        "    return a\n"
    )
    a = np.zeros((8, 8), np.float32)
    diags = nkic.check(str(kernel), a=a)
    assert any(d.code == code and text in d.message for d in diags), diags


def test_binary_operations_broadcast_rows_and_columns():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((128, 512)).astype(np.float32)
    row = rng.standard_normal((1, 512)).astype(np.float32)
    col = rng.standard_normal((128, 1)).astype(np.float32)
    out = nkic.compile(KERNELS, a, row, col, kernel="broadcast_sum")(a, row, col)
    np.testing.assert_allclose(out, (a + row) * col, rtol=1e-6)


def test_a_psum_tile_is_stored_to_an_hbm_output():
    rng = np.random.default_rng(7)
    lhsT = rng.standard_normal((128, 64)).astype(np.float32)
    rhs = rng.standard_normal((128, 256)).astype(np.float32)
    out = nkic.compile(KERNELS, lhsT, rhs, kernel="matmul_stored_from_psum")(lhsT, rhs)
    np.testing.assert_allclose(out, lhsT.T.astype(np.float64) @ rhs, rtol=1e-4, atol=1e-4)


def test_rand_without_dtype_is_float32_in_0_1():
    out = nkic.compile(KERNELS, kernel="uniform_default_dtype")()
    assert out.dtype == np.float32 and out.min() >= 0.0 and out.max() < 1.0
    assert len(np.unique(out)) > 1000


def test_an_operator_passed_as_a_kernel_argument(tmp_path):
    a = np.random.default_rng(8).standard_normal((128, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    neff = tmp_path / "k.neff"
    nkic_cli = [sys.executable, "-m", "nkic"]
    subprocess.run(
        [*nkic_cli, "compile", KERNELS, "-k", "combine_with", "--arg", "a=float32[128,64]",
         "--arg", "op=np.minimum", "-o", str(neff)],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [*nkic_cli, "run", str(neff), "--in", f"a={tmp_path / 'a.npy'}", "--out-dir",
         str(tmp_path)],
        check=True, capture_output=True,
    )  # fmt: skip
    out = np.load(tmp_path / "out.npy")
    np.testing.assert_array_equal(out, np.minimum(a, a * np.float32(0.5)))


def test_numpy_scalar_types_convert_numbers():
    a = np.random.default_rng(10).standard_normal((128, 32)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="scaled_by_numpy_scalar")(a)
    np.testing.assert_allclose(out, a * np.float32(0.1) + 3, rtol=1e-6)


def test_an_int32_row_broadcasts_across_partitions_exactly():
    row = np.random.default_rng(11).integers(-(2**31), 2**31 - 1, (1, 64)).astype(np.int32)
    out = nkic.compile(KERNELS, row, kernel="broadcast_int_row")(row)
    np.testing.assert_array_equal(out, np.repeat(row, 128, axis=0))
