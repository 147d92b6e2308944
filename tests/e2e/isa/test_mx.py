"""trn3 MX: quantize_mx and nc_matmul_mx (MXFP8 / MXFP4 with e8m0 group scales)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from .helpers import BF16, FP8E4, FP8E5, assert_bits, f32, rnd, run

FAM = "mx"
FP4 = ml_dtypes.float4_e2m1fn
EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
ELEM = {"float8_e4m3fn_x4": FP8E4, "float8_e5m2_x4": FP8E5}


def pack8(vals):
    """(P, W, 4) fp8 -> (P, W) uint32, element 0 in the lowest byte."""
    b = np.ascontiguousarray(vals).view(np.uint8).astype(np.uint32)
    return (b[..., 0] | b[..., 1] << 8 | b[..., 2] << 16 | b[..., 3] << 24).astype(np.uint32)


def pack4(vals):
    """(P, W, 4) fp4 -> (P, W) uint16, nibble 0 lowest."""
    n = np.ascontiguousarray(vals).view(np.uint8).astype(np.uint16) & 0xF
    return (n[..., 0] | n[..., 1] << 4 | n[..., 2] << 8 | n[..., 3] << 12).astype(np.uint16)


def scale_rows(P):
    groups = P // 8
    return list(range(groups)) if P <= 32 else [(g // 4) * 32 + g % 4 for g in range(groups)]


@pytest.mark.parametrize("dtype", ["float8_e4m3fn_x4", "float8_e5m2_x4"])
@pytest.mark.parametrize(("P", "nki"), [(32, "0.7"), (64, "0.7"), (32, "0.4")])
def test_quantize_mx(dtype, P, nki):
    """The group scale is 2^(floor(log2 amax) - emax + 1) from NKI 0.5 on, twice the OCP
    sample algorithm's 2^(floor(log2 amax) - emax) that NKI 0.3/0.4 kernels get."""
    F = 16
    x = rnd((P, F), BF16, seed=1, scale=3)
    x[0:8, 0:4] = 0  # an all-zero group -> scale code 0
    x[8:16, 4:8] = BF16(1e30)  # large magnitudes
    x[16, 8] = BF16(-0.0)
    q, s = run(FAM, "quantize", [x], "trn3", dtype=dtype, nki=nki)
    xf = f32(x.astype(np.float32))
    g = xf.reshape(P // 8, 8, F // 4, 4)
    amax = np.abs(g).max(axis=(1, 3)).astype(np.float64)
    code = np.zeros(amax.shape, np.int64)
    nz = amax > 0
    ocp = np.floor(np.log2(amax[nz])).astype(np.int64) - EMAX[dtype] + 127
    code[nz] = ocp if nki == "0.4" else ocp + 1
    code = np.clip(code, 0, 254)
    want_scale = np.zeros_like(s)
    want_scale[scale_rows(P)] = code.astype(np.uint8)
    assert_bits(s, want_scale)
    per = np.repeat(np.repeat(code, 8, axis=0), 4, axis=1)
    scaled = f32(xf.astype(np.float64) * 2.0 ** (127 - per))
    elems = scaled.astype(ELEM[dtype]).reshape(P, F // 4, 4)
    assert_bits(q, pack8(elems))


def _deq(vals, codes, P):
    """(P, W, 4) element values and per-group codes -> (4P, W) fp32 contraction matrix."""
    sc = np.stack([codes[p // 8] for p in range(P)])  # (P, W)
    v = f32(vals.astype(np.float32)) * (2.0 ** (sc.astype(np.float64) - 127))[..., None]
    return f32(v).transpose(0, 2, 1).reshape(4 * P, -1)  # contraction index 4p + j


def _mm(a, b):
    acc = np.zeros((a.shape[1], b.shape[1]), np.float32)
    for k in range(a.shape[0]):
        acc = f32(acc + f32(a[k][:, None] * b[k][None, :]))
    return acc


@pytest.mark.parametrize("P", [32, 64])
@pytest.mark.parametrize(
    ("sdt", "mdt"),
    [("float8_e4m3fn_x4", "float8_e4m3fn_x4"), ("float8_e5m2_x4", "float4_e2m1fn_x4")],
)
def test_nc_matmul_mx(P, sdt, mdt):
    M, N = 4, 6
    rng = np.random.default_rng(2)

    def data(dt, W):
        if dt == "float4_e2m1fn_x4":
            v = rng.standard_normal((P, W, 4)).astype(FP4)
            return v, pack4(v)
        v = rng.standard_normal((P, W, 4)).astype(ELEM[dt])
        return v, pack8(v)

    sv, sw = data(sdt, M)
    mvv, mw = data(mdt, N)
    srows = P // 8 if P <= 32 else P
    ss = np.zeros((srows, M), np.uint8)
    ms = np.zeros((srows, N), np.uint8)
    sc = rng.integers(120, 134, (P // 8, M)).astype(np.uint8)
    mc = rng.integers(120, 134, (P // 8, N)).astype(np.uint8)
    ss[scale_rows(P)] = sc
    ms[scale_rows(P)] = mc
    got = run(FAM, "matmul_mx", [sw, mw, ss, ms], "trn3", st_dtype=sdt, mv_dtype=mdt)
    want = _mm(_deq(sv, sc, P), _deq(mvv, mc, P))
    assert_bits(got, want)
