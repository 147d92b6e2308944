"""Beta 1 index grids in any order: a transposed grid swaps strides, an axis indexing two
dimensions walks both, an unused axis broadcasts the read, and a grid of more free axes than
an access pattern has becomes several instructions; each result equals numpy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

KERNELS = str(Path(__file__).parent / "grid_orders.py")


def test_a_transposed_grid_loads_the_transpose():
    a = np.random.default_rng(0).standard_normal((256, 128)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(KERNELS, a, kernel="load_transposed")(a), a.T)


def test_one_axis_on_two_dimensions_reads_the_diagonal():
    a = np.random.default_rng(1).standard_normal((64, 16, 16)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="diagonals")(a)
    np.testing.assert_array_equal(out, np.einsum("pjj->pj", a))


def test_unused_axes_broadcast_the_read():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((128, 32)).astype(np.float32)
    b = rng.standard_normal((128, 2)).astype(np.float32)
    out = nkic.compile(KERNELS, a, b, kernel="outer_sum")(a, b)
    np.testing.assert_array_equal(out, (a[:, :, None] + b[:, None, :]).reshape(128, 64))


def test_grid_axes_in_reverse_order_on_chip():
    a = np.random.default_rng(3).standard_normal((32, 3, 4, 5)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="trilinear_corners")(a)
    np.testing.assert_array_equal(out, a[:, [0, 2]][:, :, [0, 3]][:, :, :, [0, 4]])


def test_five_free_grid_axes_become_two_instructions():
    dims = (2, 3, 4, 2, 3)
    a = np.random.default_rng(4).standard_normal((128, 144)).astype(np.float32)
    k = nkic.compile(KERNELS, a, *dims, kernel="reverse_axes")
    want = (a.reshape(128, *dims).transpose(0, 5, 4, 3, 2, 1) * np.float32(2)).reshape(128, -1)
    np.testing.assert_array_equal(k(a), want)
    # the copy into the reversed layout walks 5 free axes that do not merge: one instruction
    # per position of the first; the contiguous multiply merges them into one
    assert k.ir.count("tensor_copy[") == 2
    assert k.ir.count("tensor_scalar[") == 1


def test_a_partition_dimension_on_a_free_axis_is_a_diagnostic():
    a = np.zeros((128, 128), np.float32)
    diags = [d for d in nkic.check(KERNELS, kernel="partition_from_free", a=a)]
    assert [d.code for d in diags if d.severity == "error"] == ["err_unsupported_api"]
    assert "partition dimension" in diags[0].message and diags[0].loc.line > 0


def test_a_mask_shortens_a_sum_of_grids_in_the_tail_tile():
    a = np.random.default_rng(5).standard_normal((200, 16)).astype(np.float32)
    out = nkic.compile(KERNELS, a, 3, kernel="row_windows")(a)
    want = np.stack([a[j : j + 198] for j in range(3)], axis=1)
    np.testing.assert_array_equal(out, want)
