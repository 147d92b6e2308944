"""Beta 1 DMA forms: each result equals numpy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

KERNELS = str(Path(__file__).parent / "dma_kernels.py")


def test_load_transpose2d_moves_float32_bit_for_bit():
    a = np.random.default_rng(0).standard_normal((512, 128)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(KERNELS, a, kernel="transpose_f32")(a), a.T)


def test_the_shared_identity_is_an_hbm_constant_kernels_load():
    a = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="diagonal_by_identity")(a)
    np.testing.assert_array_equal(out, np.diag(np.diag(a)))
    out = nkic.compile(KERNELS, 96, kernel="identity_values")()
    np.testing.assert_array_equal(out, np.eye(96, dtype=np.int32))


def test_dma_copy_read_modify_write_accumulates_repeated_rows_in_order():
    rng = np.random.default_rng(2)
    base = rng.standard_normal((32, 64)).astype(np.float32)
    src = rng.standard_normal((96, 64)).astype(np.float32)
    rows = rng.integers(0, 32, size=(96, 1)).astype(np.int32)  # every row hit about 3 times
    out = nkic.compile(KERNELS, base, src, rows, kernel="scatter_add")(base, src, rows)
    want = base.copy()
    for p in range(96):  # one row after another, in float32, as the DMA serialises them
        want[rows[p, 0]] += src[p]
    np.testing.assert_array_equal(out, want)


def test_an_indirect_dma_transpose_gathers_then_transposes():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 2**16, size=(64, 4, 96)).astype(np.uint16)
    rows = rng.integers(0, 64, size=(48, 1)).astype(np.uint32)
    out = nkic.compile(KERNELS, src, rows, kernel="gather_transpose")(src, rows)
    np.testing.assert_array_equal(out, np.transpose(src[rows[:, 0]], (2, 1, 0)))


def test_checking_without_shapes_accepts_dst_rmw_op():
    # the syntactic check of a file (no shapes) knows Beta 1's dma_copy keyword
    codes = {d.code for d in nkic.check(KERNELS)}
    assert "err_unexpected_keyword" not in codes and "nkic_shapes_unknown" in codes
