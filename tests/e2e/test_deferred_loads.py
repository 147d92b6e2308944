"""An SBUF tile loaded from an input that nothing writes is copied only when something other
than a read of the whole tile touches it; every value read is the one an immediate copy gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic

KERNELS = Path(__file__).resolve().parent / "kernels" / "deferred_loads.py"


def _inputs(dtype, n: int = 2):
    rng = np.random.default_rng(11)
    return [rng.standard_normal((128, 64), dtype=np.float32).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("dtype", [np.float32, "bfloat16"])
def test_a_partial_overwrite_of_a_loaded_tile_keeps_the_rest_of_the_load(dtype):
    (x,) = _inputs(dtype, 1)
    k = nkic.compile(str(KERNELS), kernel="load_then_zero_a_corner", x=x)
    want = x.copy()
    want[0:64, 0:8] = 0
    got = k(x)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_a_second_load_over_part_of_the_first_wins_where_they_overlap():
    x, y = _inputs(np.float32)
    k = nkic.compile(str(KERNELS), kernel="overlapping_loads", x=x, y=y)
    np.testing.assert_array_equal(k(x, y), np.concatenate([x[:, :32], y], axis=1))


def test_reading_part_of_a_reloaded_tile_sees_the_latest_load():
    x, y = _inputs(np.float32)
    k = nkic.compile(str(KERNELS), kernel="reload_and_read_part", x=x, y=y)
    np.testing.assert_array_equal(k(x, y), y[64:128] * np.float32(2))
