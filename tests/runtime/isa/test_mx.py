"""quantize_mx: e8m0 group scales from the block maximum, RNE element rounding, layout."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

from .formats import FORMATS, round_nearest_even

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def scale_rows(partitions):
    groups = partitions // 8
    if partitions <= 32:
        return list(range(groups))
    return [(g // 4) * 32 + g % 4 for g in range(groups)]


@pytest.mark.parametrize(
    ("partitions", "name", "element", "emax"),
    [(32, "float8_e4m3fn_x4", "float8_e4m3fn", 8), (64, "float8_e5m2_x4", "float8_e5m2", 15)],
)
def test_quantize_mx_matches_the_documented_scale(ctx3, partitions, name, element, emax):
    rng = np.random.default_rng(0)
    src = rng.standard_normal((partitions, 8)) * 10.0 ** rng.integers(-3, 4, (partitions, 1))
    src = src.astype(BF16)
    src[8:16, 4:8] = 0  # an all-zero group
    scale_shape = (partitions if partitions > 32 else partitions // 8, 2)
    ops = {
        "src": src,
        "dst": np.zeros((partitions, 2), np.uint32),
        "dst_scale": np.full(scale_shape, 0xAB, np.uint8),
    }
    got = run(
        ctx3, "quantize_mx", ops, _dtypes={"src": "bfloat16", "dst": name, "dst_scale": "uint8"}
    )
    rows = scale_rows(partitions)
    for g in range(partitions // 8):
        for w in range(2):
            block = src[8 * g : 8 * g + 8, 4 * w : 4 * w + 4].astype(np.float64)
            amax = np.abs(block).max()
            code = 0 if amax == 0 else math.floor(math.log2(amax)) - (emax - 1) + 127
            assert got["dst_scale"][rows[g], w] == code
            scaled = block / 2.0 ** (code - 127)
            want_codes = np.asarray(round_nearest_even(scaled.reshape(-1), FORMATS[element]))
            words = got["dst"][8 * g : 8 * g + 8, w]
            lanes = [(words >> (8 * j)) & 0xFF for j in range(4)]
            codes = np.stack(lanes, axis=1).astype(np.uint8)
            decoded = codes.view(getattr(ml_dtypes, element)).astype(np.float64)
            np.testing.assert_array_equal(decoded.reshape(-1), want_codes)
    untouched = np.ones(scale_shape, bool)
    untouched[rows] = False
    assert (got["dst_scale"][untouched] == 0xAB).all()


def test_quantize_then_matmul_mx_round_trips_exact_values(ctx3):
    src = np.zeros((32, 4), F)
    src[:, 0] = 1.0
    src[3, 1] = -0.5
    words = run(
        ctx3,
        "quantize_mx",
        {
            "src": src.astype(BF16),
            "dst": np.zeros((32, 1), np.uint32),
            "dst_scale": np.zeros((4, 1), np.uint8),
        },
        _dtypes={"dst": "float8_e4m3fn_x4", "dst_scale": "uint8"},
    )
    ones = run(
        ctx3,
        "quantize_mx",
        {
            "src": np.ones((32, 4), BF16),
            "dst": np.zeros((32, 1), np.uint32),
            "dst_scale": np.zeros((4, 1), np.uint8),
        },
        _dtypes={"dst": "float8_e4m3fn_x4", "dst_scale": "uint8"},
    )
    ops = {
        "stationary": words["dst"],
        "moving": ones["dst"],
        "stationary_scale": words["dst_scale"],
        "moving_scale": ones["dst_scale"],
        "dst": np.zeros((1, 1), F),
    }
    got = run(
        ctx3,
        "nc_matmul_mx",
        ops,
        accumulate=False,
        _dtypes={
            "stationary": "float8_e4m3fn_x4",
            "moving": "float8_e4m3fn_x4",
            "stationary_scale": "uint8",
            "moving_scale": "uint8",
            "dst": "float32",
        },
    )
    assert got["dst"][0, 0] == src.sum()


def test_quantize_mx_rejects_bad_shapes(ctx3):
    with pytest.raises(ValueError, match="quantize_mx"):
        run(
            ctx3,
            "quantize_mx",
            {
                "src": np.zeros((16, 4), BF16),
                "dst": np.zeros((16, 1), np.uint32),
                "dst_scale": np.zeros((2, 1), np.uint8),
            },
            _dtypes={"dst": "float8_e4m3fn_x4"},
        )
