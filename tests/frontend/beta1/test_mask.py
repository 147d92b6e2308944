"""Beta 1 `mask=`: an affine index-grid predicate with a compile-time bound restricts the
operation to the grid points it keeps (the tail tile of a shape that is not a multiple of the
tile size); other masks are diagnostics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic

KERNELS = Path(__file__).parent / "masked_tiles.py"


def test_tail_tile_of_rows_on_loads_compute_and_stores():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 96)).astype(np.float32)
    b = rng.standard_normal((300, 96)).astype(np.float32)
    out = nkic.compile(str(KERNELS), a, b, kernel="tail_rows")(a, b)
    want = np.tanh(a.astype(np.float64) + 2.0 * b.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_a_mask_true_in_every_iteration_keeps_the_loop():
    a = np.random.default_rng(1).standard_normal((256, 96)).astype(np.float32)
    k = nkic.compile(str(KERNELS), a, a, kernel="tail_rows")
    np.testing.assert_allclose(k(a, a), np.tanh(3.0 * a.astype(np.float64)), rtol=1e-6, atol=1e-6)
    # one hardware loop: its body has the two loads and the store once
    assert k.ir.count("dma_copy[") == 3


def test_tail_tiles_in_both_dimensions_with_a_conjunction():
    a = np.random.default_rng(2).standard_normal((200, 600)).astype(np.float32)
    out = nkic.compile(str(KERNELS), a, kernel="tail_both")(a)
    np.testing.assert_array_equal(out, a * np.float32(3.0) + np.float32(1.0))


def test_a_window_of_columns():
    a = np.random.default_rng(3).standard_normal((128, 64)).astype(np.float32)
    out = nkic.compile(str(KERNELS), a, kernel="window")(a)
    want = np.zeros_like(a)
    want[:, 16:48] = a[:, 16:48] * np.float32(2.0)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize(
    ("kernel", "rows", "code", "text", "line"),
    [
        ("unmasked_tail", 300, "err_tensor_access_out_of_bound", "index 383 is out of", 63),
        ("equality_mask", 128, "err_unsupported_api", "not a mask nkic supports", 73),
        ("tile_mask", 128, "err_unsupported_api", "mask= is not supported by nkic (a", 84),
    ],
)
def test_what_a_mask_cannot_do_is_a_diagnostic(kernel, rows, code, text, line):
    a = np.zeros((rows, 64), np.float32)
    diags = nkic.check(str(KERNELS), kernel=kernel, a=a)
    assert [(d.code, d.loc.line) for d in diags] == [(code, line)]
    assert text in diags[0].message and diags[0].hint


def test_check_without_shapes_accepts_mask_keywords():
    diags = nkic.check(str(KERNELS))
    assert diags and {d.code for d in diags} == {"nkic_shapes_unknown"}


def test_a_branch_on_an_index_grid_is_a_diagnostic_with_or_without_shapes():
    kernels = Path(__file__).parent / "branch_on_grid.py"
    code = "err_control_flow_condition_depending_on_arange"
    for args in ({}, {"a": np.zeros((128, 64), np.float32)}):
        diags = [d for d in nkic.check(str(kernels), **args) if d.severity != "note"]
        assert [(d.code, d.loc.line) for d in diags] == [(code, 13), (code, 15)]
        assert "nl.arange / nl.mgrid index grids" in diags[0].message and diags[0].hint


GRID_KERNELS = str(Path(__file__).parent / "masked_grid_tiles.py")


def test_a_masked_call_returns_a_tile_of_the_whole_grid():
    a = np.random.default_rng(4).standard_normal((100, 64)).astype(np.float32)
    out = nkic.compile(GRID_KERNELS, a, kernel="grid_shaped_result")(a)
    assert out.shape == (128, 64)
    np.testing.assert_array_equal(out[:100], a)


def test_storing_the_part_a_mask_left_unwritten_is_an_error():
    a = np.zeros((100, 64), np.float32)
    diags = nkic.check(GRID_KERNELS, kernel="unwritten_rows_stored", a=a)
    assert [(d.code, d.loc.line) for d in diags] == [("err_read_before_write", 27)]


def test_a_masked_reduction_keeps_the_grid_axes_it_does_not_reduce():
    a = np.random.default_rng(5).standard_normal((300, 40)).astype(np.float32)
    want = np.maximum(np.maximum(a[:-1, :-1], a[:-1, 1:]), np.maximum(a[1:, :-1], a[1:, 1:]))
    diags = nkic.check(GRID_KERNELS, kernel="window_max", a=a)
    # the last tile reduces one row its load did not write (and never stores its result)
    assert [(d.code, d.loc.line) for d in diags] == [("nkic_partly_uninitialised_read", 42)]
    out = nkic.compile(GRID_KERNELS, a, kernel="window_max")(a)
    np.testing.assert_array_equal(out, want)


def test_assigning_a_masked_call_writes_only_the_kept_elements():
    a = np.random.default_rng(6).standard_normal((128, 64)).astype(np.float32)
    k = nkic.compile(GRID_KERNELS, a, kernel="assign_masked")
    assert not [d for d in nkic.check(GRID_KERNELS, kernel="assign_masked", a=a)]
    want = np.zeros_like(a)
    want[:, :32] = np.exp(a[:, :32].astype(np.float64))
    np.testing.assert_allclose(k(a), want, rtol=1e-6, atol=0)
