"""The finite test on raw bits (`nkirt.dtypes.all_finite`) against float32 `isfinite`, and the
non-finite report of runs whose bf16/fp8 outputs overflow."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from nkirt import dtypes

import nkic

FORMATS = [
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.float8_e8m0fnu,
]
#: examples/tiled_add.py with an `nl.affine_range` loop: a kept loop names the iteration.
TILED_ADD = Path(__file__).resolve().parents[1] / "cli" / "kernels" / "kept_loops.py"


def reference(array: np.ndarray) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.isfinite(array.astype(np.float32)).all())


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: np.dtype(f).name)
def test_every_bit_pattern_alone_and_after_finite_values(fmt):
    dtype = np.dtype(fmt)
    unsigned = np.uint8 if dtype.itemsize == 1 else np.uint16
    patterns = np.arange(1 << (8 * dtype.itemsize), dtype=np.int64).astype(unsigned).view(dtype)
    with np.errstate(all="ignore"):
        finite = np.isfinite(patterns.astype(np.float32))
    assert not finite.all()  # every format here has a NaN (or Inf) pattern to find
    one = np.array([1.0], np.float32).astype(dtype)
    for i in range(len(patterns)):
        alone = patterns[i : i + 1]
        assert dtypes.all_finite(alone) == finite[i], hex(int(alone.view(unsigned)[0]))
        # the test sees a pattern anywhere in a tile, not only at its start
        tile = np.concatenate([np.repeat(one, 37), alone, np.repeat(one, 43)]).reshape(9, 9)[:, 1:]
        assert dtypes.all_finite(tile) == reference(tile)
    assert dtypes.all_finite(patterns[finite]) and not dtypes.all_finite(patterns)


def test_subnormals_zeros_and_extremes_are_finite_and_inf_nan_are_not():
    tiny = np.finfo(np.float32).smallest_subnormal
    values = np.array([0.0, -0.0, tiny, -tiny, 1e-40, 3.3e38, -3.3e38], np.float32)
    bf16 = values.astype(ml_dtypes.bfloat16)
    assert reference(bf16) and dtypes.all_finite(bf16)
    for bad in (np.inf, -np.inf, np.nan, -np.nan):
        assert not dtypes.all_finite(np.append(values, bad).astype(ml_dtypes.bfloat16))
    e4m3fn = np.array([0.0, -0.0, 448.0, -448.0, 2.0**-9], np.float32).astype(
        ml_dtypes.float8_e4m3fn
    )
    assert reference(e4m3fn) and dtypes.all_finite(e4m3fn)
    assert dtypes.all_finite(np.zeros(0, ml_dtypes.bfloat16))
    assert dtypes.all_finite(np.arange(5, dtype=np.int32))  # integers are always finite


@pytest.mark.parametrize(
    "dtype, value", [("bfloat16", 3.0e38), ("float8_e4m3fn", 300.0), ("float8_e5m2", 40000.0)]
)
def test_an_overflowing_narrow_add_is_reported_at_its_line(dtype, value):
    """Finite inputs whose sum overflows the output format: Inf (bf16, e5m2) or NaN (e4m3fn)."""
    a = np.zeros((256, 64), np.float32)
    a[130, 5] = value  # second tile only
    a = a.astype(dtypes.STORAGE[dtype])
    assert reference(a)
    k = nkic.compile(str(TILED_ADD), a, a, kernel="tiled_add")
    with pytest.warns(nkic.NonFiniteWarning):
        out = k(a, a)
    assert not reference(out[130:131, 5:6])
    (first,) = [w for w in k.profile["warnings"] if w.get("kind") == "non-finite"]
    assert first["op"] == "tensor_tensor" and first["loc"].endswith("kept_loops.py:26")
    assert "[i=1]" in first["message"] or "[i0=1]" in first["message"]


def test_ieee_formats_match_isfinite_on_every_float16_and_sampled_float32_64_patterns():
    halves = np.arange(1 << 16, dtype=np.int64).astype(np.uint16).view(np.float16)
    finite = np.isfinite(halves)
    for i in range(len(halves)):
        assert dtypes.all_finite(halves[i : i + 1]) == finite[i]
    rng = np.random.default_rng(8)
    for unsigned, fmt in ((np.uint32, np.float32), (np.uint64, np.float64)):
        info = np.iinfo(unsigned)
        patterns = rng.integers(0, info.max, 5000, dtype=unsigned, endpoint=True)
        special = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0], fmt)
        edges = np.array([np.finfo(fmt).max, -np.finfo(fmt).max, np.finfo(fmt).smallest_subnormal])
        values = np.concatenate([patterns.view(fmt), special, edges.astype(fmt)])
        finite = np.isfinite(values)
        for i in range(len(values)):
            assert dtypes.all_finite(values[i : i + 1]) == finite[i]
        assert dtypes.all_finite(values[finite]) and not dtypes.all_finite(values)
        # a strided view of a finite array with one non-finite element outside it
        grid = values[finite][:400].reshape(20, 20).copy()
        grid[3, 5] = np.nan
        assert dtypes.all_finite(grid[:, 6:]) and not dtypes.all_finite(grid[:, 4:])
