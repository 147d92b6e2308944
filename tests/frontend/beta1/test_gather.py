"""Beta 1 value-returning gathers: result shapes as Beta 1 documented them, values as numpy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

KERNELS = str(Path(__file__).parent / "gather_kernels.py")


def test_local_gather_returns_the_indices_of_each_core_in_read_order():
    rng = np.random.default_rng(0)
    per, K = 2, 3
    src = rng.standard_normal((32, 64, per)).astype(np.float32)
    index = (rng.integers(0, 64, size=(32, K)) * per).astype(np.uint16)
    out = nkic.compile(KERNELS, src, index, per, kernel="gather_rows")(src, index)
    assert out.shape == (32, K, 16, per)
    flat = src.reshape(32, -1)
    want = np.empty((32, K * 16, per), np.float32)
    for core in range(2):  # 16 partitions a GpSimd core, indices read down the partitions
        rows = slice(16 * core, 16 * core + 16)
        offsets = index[rows].flatten(order="F").astype(np.int64)
        for k, off in enumerate(offsets):
            want[rows, k] = flat[rows, off : off + per]
    np.testing.assert_array_equal(out, want.reshape(32, K, 16, per))


def test_a_mask_on_match_replace8_restricts_its_data_not_its_eight_values():
    a = np.random.default_rng(1).permutation(64 * 32).reshape(64, 32).astype(np.float32)
    out, idx = nkic.compile(KERNELS, a, kernel="replace_top8_in_half")(a)
    half = a[:, :16]
    want_idx = np.argsort(-half, axis=1, kind="stable")[:, :8]
    want = half.copy()
    np.put_along_axis(want, want_idx, 0.0, axis=1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(want_idx, axis=1))
