"""Beta 1 DMA forms: each result equals numpy's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

KERNELS = str(Path(__file__).parent / "dma_kernels.py")


def test_load_transpose2d_moves_float32_bit_for_bit():
    a = np.random.default_rng(0).standard_normal((512, 128)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(KERNELS, a, kernel="transpose_f32")(a), a.T)
