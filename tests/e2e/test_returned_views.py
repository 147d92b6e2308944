"""A kernel that returns a view of a tensor (a reshape, a slice, a permutation) gives the caller
that view, with its shape: from the Python API, as `nkic run` .npy outputs, and in the IR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import nkic

KERNELS = Path(__file__).resolve().parent / "kernels" / "returned_views.py"


def test_a_returned_reshape_has_the_views_shape():
    x = np.random.default_rng(0).standard_normal((2, 3, 16)).astype(np.float32)
    k = nkic.compile(str(KERNELS), kernel="row_max", x=x)
    got = k(x)
    assert got.shape == (2, 3, 1)
    np.testing.assert_array_equal(got, x.max(axis=2, keepdims=True))
    assert "return %t1 view([2, 3, 1], 0, [3, 1, 1])" in k.ir


def test_returned_slices_and_permutations_are_the_views_elements():
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    k = nkic.compile(str(KERNELS), kernel="doubled_parts", x=x)
    rows, transposed = k(x)
    np.testing.assert_array_equal(rows, 2 * x)
    full = np.concatenate([2 * x[:1], 2 * x])
    np.testing.assert_array_equal(transposed, full.T)
    assert transposed.flags.c_contiguous


def test_nkic_run_writes_the_returned_view(tmp_path):
    neff = tmp_path / "k.neff"
    cli = [sys.executable, "-m", "nkic"]
    subprocess.run(
        [
            *cli,
            "compile",
            str(KERNELS),
            "-k",
            "row_max",
            "--arg",
            "x=float32[2,3,16]",
            "-o",
            str(neff),
        ],
        check=True,
        capture_output=True,
    )
    x = np.random.default_rng(2).standard_normal((2, 3, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run(
        [*cli, "run", str(neff), "--in", f"x={tmp_path / 'x.npy'}", "--out-dir", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    got = np.load(tmp_path / "out.npy")
    assert got.shape == (2, 3, 1)
    np.testing.assert_array_equal(got, x.max(axis=2, keepdims=True))
