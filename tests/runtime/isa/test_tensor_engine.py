"""nc_matmul (fp32 PSUM accumulation, double_row, transpose mode), nc_matmul_mx, nc_transpose."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

from .conftest import make_ctx
from .formats import E2M1, FORMATS

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def ref_matmul(stationary, moving):
    """dst[m, n] = Σ_k stationary[k, m] * moving[k, n]: fp32 products, summed in k order."""
    s, mv = stationary.astype(F), moving.astype(F)
    out = np.zeros((s.shape[1], mv.shape[1]), F)
    with np.errstate(all="ignore"):
        for m in range(s.shape[1]):
            for n in range(mv.shape[1]):
                acc = F(0)
                for k in range(s.shape[0]):
                    acc = F(acc + F(s[k, m] * mv[k, n]))
                out[m, n] = acc
    return out


@pytest.mark.parametrize(
    "dtype", [F, BF16, np.float16, ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2]
)
def test_nc_matmul_matches_sequential_fp32_reference(ctx, dtype):
    rng = np.random.default_rng(0)
    stationary = rng.standard_normal((9, 3)).astype(dtype)
    moving = rng.standard_normal((9, 5)).astype(dtype)
    dst = np.zeros((3, 5), F)
    got = run(
        ctx, "nc_matmul", {"stationary": stationary, "moving": moving, "dst": dst}, accumulate=False
    )["dst"]
    np.testing.assert_array_equal(got, ref_matmul(stationary, moving))


def test_nc_matmul_sums_in_contraction_order(ctx):
    stationary = np.array([[1e8], [1.0], [-1e8], [1.0]], F)
    moving = np.ones((4, 1), F)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": stationary, "moving": moving, "dst": np.zeros((1, 1), F)},
        accumulate=False,
    )["dst"]
    assert got[0, 0] == 1.0  # ((1e8 + 1) - 1e8) + 1 in fp32


def test_nc_matmul_accumulates_onto_psum(ctx):
    rng = np.random.default_rng(1)
    stationary = rng.standard_normal((4, 2)).astype(BF16)
    moving = rng.standard_normal((4, 3)).astype(BF16)
    dst = rng.standard_normal((2, 3)).astype(F)
    got = run(
        ctx, "nc_matmul", {"stationary": stationary, "moving": moving, "dst": dst}, accumulate=True
    )["dst"]
    np.testing.assert_array_equal(got, dst + ref_matmul(stationary, moving))
    fresh = run(
        ctx, "nc_matmul", {"stationary": stationary, "moving": moving, "dst": dst}, accumulate=False
    )["dst"]
    np.testing.assert_array_equal(fresh, ref_matmul(stationary, moving))


def test_nc_matmul_propagates_nan_and_inf(ctx):
    stationary = np.array([[np.inf, 1.0], [0.0, np.nan]], F)
    moving = np.array([[1.0, 0.0], [1.0, 1.0]], F)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": stationary, "moving": moving, "dst": np.zeros((2, 2), F)},
        accumulate=False,
    )["dst"]
    np.testing.assert_array_equal(got, ref_matmul(stationary, moving))


def test_nc_matmul_bf16_psum_on_trn3_rounds_the_accumulated_sum_once(ctx3):
    stationary = np.ones((2, 1), F)
    moving = np.array([[1.0], [2.0**-8]], F)
    dst = np.array([[2.0**-12]], BF16)
    got = run(
        ctx3,
        "nc_matmul",
        {"stationary": stationary, "moving": moving, "dst": dst},
        accumulate=True,
        _dtypes={"dst": "bfloat16"},
    )["dst"]
    assert got.dtype == BF16
    # fp32 1 + 2^-8 + 2^-12 is above the bf16 tie 1 + 2^-8; rounding the product first would
    # have given 1.0
    assert got.astype(F)[0, 0] == F(1 + 2**-7)


def test_nc_matmul_double_row_contracts_over_both_rows(ctx):
    rng = np.random.default_rng(2)
    stationary = rng.standard_normal((8, 2, 3)).astype(ml_dtypes.float8_e4m3)
    moving = rng.standard_normal((8, 2, 4)).astype(ml_dtypes.float8_e5m2)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": stationary, "moving": moving, "dst": np.zeros((3, 4), F)},
        accumulate=False,
        perf_mode="double_row",
    )["dst"]
    want = ref_matmul(stationary.reshape(16, 3), moving.reshape(16, 4))
    np.testing.assert_array_equal(got, want)


def test_nc_matmul_transpose_mode_is_bit_exact(ctx):
    data = np.random.default_rng(3).integers(0, 2**32, (5, 3), dtype=np.uint64)
    data = data.astype(np.uint32).view(F)
    data[0, 0] = np.array([0x7FC00123], np.uint32).view(F)[0]
    identity = np.eye(5, dtype=F)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": data, "moving": identity, "dst": np.zeros((3, 5), F)},
        accumulate=False,
        is_transpose=True,
    )["dst"]
    np.testing.assert_array_equal(got.view(np.uint32), data.T.view(np.uint32))


def test_nc_matmul_transpose_of_fp8_zero_extends_into_16_bits(ctx):
    data = np.arange(6, dtype=np.uint8).reshape(2, 3).view(ml_dtypes.float8_e4m3)
    identity = np.eye(2, dtype=ml_dtypes.float8_e4m3)
    dst = np.full((3, 2), 0xFFFF, np.uint16).view(BF16)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": data, "moving": identity, "dst": dst},
        accumulate=False,
        is_transpose=True,
    )["dst"]
    np.testing.assert_array_equal(got.view(np.uint16), data.view(np.uint8).T.astype(np.uint16))


def test_nc_matmul_transpose_mode_needs_a_selection_matrix(ctx):
    with pytest.raises(ValueError, match="is_transpose"):
        run(
            ctx,
            "nc_matmul",
            {
                "stationary": np.ones((2, 2), F),
                "moving": np.full((2, 2), 2, F),
                "dst": np.zeros((2, 2), F),
            },
            accumulate=False,
            is_transpose=True,
        )


def test_nc_matmul_transpose_flag_is_only_a_hint_on_trn1():
    ctx = make_ctx("trn1")
    data = np.array([[np.nan, 1.0], [2.0, 3.0]], F)
    got = run(
        ctx,
        "nc_matmul",
        {"stationary": data, "moving": np.eye(2, dtype=F), "dst": np.zeros((2, 2), F)},
        accumulate=False,
        is_transpose=True,
    )["dst"]
    assert np.isnan(got[0]).all()  # NaN * 0 contaminates the whole output row


@pytest.mark.parametrize("shape", [(4, 6), (3, 2, 5), (1, 1)])
def test_nc_transpose_is_bit_exact_on_trn2(ctx, shape):
    data = np.random.default_rng(4).integers(0, 2**16, shape, dtype=np.uint64).astype(np.uint16)
    got = run(ctx, "nc_transpose", {"data": data.view(BF16)}, engine="tensor")["dst"]
    np.testing.assert_array_equal(got.view(np.uint16), data.reshape(shape[0], -1).T)


def test_nc_transpose_on_trn1_tensor_engine_spreads_nan():
    ctx = make_ctx("trn1")
    data = np.array([[1.0, np.inf], [2.0, 3.0]], F)
    got = run(ctx, "nc_transpose", {"data": data}, engine="tensor")["dst"]
    np.testing.assert_array_equal(got[0], [1.0, 2.0])
    np.testing.assert_array_equal(got[1], [np.inf, np.nan])  # inf * 0 poisons the other column
    vector = run(ctx, "nc_transpose", {"data": data}, engine="vector")["dst"]
    np.testing.assert_array_equal(vector, data.T)


def pack_codes(codes: np.ndarray, width: int) -> np.ndarray:
    """Pack groups of 4 element codes along the last axis, element 0 in the low bits."""
    grouped = codes.reshape(*codes.shape[:-1], -1, 4).astype(np.uint64)
    words = sum(grouped[..., j] << (width * j) for j in range(4))
    return words.astype(np.uint32 if width == 8 else np.uint16)


def mx_reference(codes, fmt, scale_codes, scale_rows):
    """[P*4, F] dequantized matrix: element (p, f, j) at contraction index 4p + j."""
    partitions, free4 = codes.shape
    values = np.vectorize(lambda c: fmt.decode(int(c)))(codes).reshape(partitions, free4 // 4, 4)
    out = np.zeros((partitions * 4, free4 // 4))
    for p in range(partitions):
        for f in range(free4 // 4):
            scale = 2.0 ** (int(scale_codes[scale_rows[p // 8], f]) - 127)
            for j in range(4):
                out[4 * p + j, f] = values[p, f, j] * scale
    return out.astype(F)


@pytest.mark.parametrize(
    ("partitions", "moving_name", "width", "fmt"),
    [
        (32, "float8_e4m3fn_x4", 8, FORMATS["float8_e4m3fn"]),
        (64, "float8_e5m2_x4", 8, FORMATS["float8_e5m2"]),
        (32, "float4_e2m1fn_x4", 4, E2M1),
    ],
)
def test_nc_matmul_mx_dequantizes_groups_of_32(ctx3, partitions, moving_name, width, fmt):
    rng = np.random.default_rng(6)
    s_fmt = FORMATS["float8_e4m3fn"]
    s_codes = rng.integers(0, 0x7E, (partitions, 2 * 4)).astype(np.uint32)
    m_codes = rng.integers(0, 1 << (width - 1), (partitions, 3 * 4)).astype(np.uint32)
    if width == 8 and fmt is FORMATS["float8_e5m2"]:
        m_codes = rng.integers(0, 0x7B, (partitions, 3 * 4)).astype(np.uint32)
    scale_tile_rows = partitions if partitions > 32 else partitions // 8
    if partitions > 32:
        rows = [(g // 4) * 32 + g % 4 for g in range(partitions // 8)]
    else:
        rows = list(range(partitions // 8))
    s_scales = rng.integers(120, 134, (scale_tile_rows, 2)).astype(np.uint8)
    m_scales = rng.integers(120, 134, (scale_tile_rows, 3)).astype(np.uint8)
    ops = {
        "stationary": pack_codes(s_codes, 8),
        "moving": pack_codes(m_codes, width),
        "stationary_scale": s_scales.view(ml_dtypes.float8_e8m0fnu),
        "moving_scale": m_scales,
        "dst": np.zeros((2, 3), F),
    }
    dtypes_ = {
        "stationary": "float8_e4m3fn_x4",
        "moving": moving_name,
        "stationary_scale": "float8_e8m0fnu",
        "moving_scale": "uint8",
        "dst": "float32",
    }
    got = run(ctx3, "nc_matmul_mx", ops, accumulate=False, _dtypes=dtypes_)["dst"]
    want = ref_matmul(
        mx_reference(s_codes, s_fmt, s_scales, rows), mx_reference(m_codes, fmt, m_scales, rows)
    )
    np.testing.assert_array_equal(got, want)
