"""dma_copy, dma_transpose, dma_compute, tensor_copy, memset, tensor_copy_predicated."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkic

from .helpers import BF16, FP8E4, FP8E5, TARGETS, assert_bits, f32, isa, rnd, run

FAM = "data_movement"
SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3.4e38, -1.00390625, 448.0, 500.0, 70000.0, -2.5],
    np.float32,
)


def fp32_to(x: np.ndarray, dtype) -> np.ndarray:
    """src -> fp32 -> dst per docs/numerics.md §2 (RNE; ints saturate, NaN -> 0)."""
    x = f32(x)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        y = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
        return np.clip(np.rint(y), info.min, info.max).astype(dt)
    return x.astype(dt)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int8])
def test_dma_copy_partition_broadcast_stride0(target, dtype):
    a = rnd((1, 10), seed=1, scale=20).astype(dtype)
    got = run(FAM, "dma_partition_broadcast", [a], target, P=7)
    assert_bits(got, np.repeat(a, 7, axis=0))


@pytest.mark.parametrize("target", TARGETS)
def test_dma_copy_strided_3d_pattern(target):
    a = rnd((6, 5), seed=2)
    a[0, 0], a[1, 1] = np.nan, -0.0
    got = run(FAM, "dma_strided", [a], target)
    want = a.reshape(3, 2, 5).transpose(2, 1, 0)
    assert_bits(got, np.ascontiguousarray(want))


CASTS = [
    (np.float32, "bfloat16", np.float32),
    (np.float32, "float16", np.float32),
    (np.float32, "float8_e4m3fn", np.float32),
    (np.float32, "float8_e5m2", np.float32),
    (np.float32, "int8", np.float32),
    (np.float32, "uint16", np.float32),
    (np.float32, "int32", np.float32),
    (np.int32, "float32", np.float32),
    (np.int32, "uint32", np.int32),
    (np.float32, "tfloat32", np.float32),
    (BF16, "float32", BF16),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("src", "mid", "odt"), CASTS)
def test_dma_copy_casts_through_fp32(target, src, mid, odt):
    if np.dtype(src).kind == "i":
        a = np.array([[0, -1, 2**24 + 1, 2**31 - 1, -(2**31), 7, 255, -129]], np.int32)
    else:
        a = SPECIAL.reshape(1, -1).copy()
        a = np.concatenate([a, rnd((1, 12), seed=3, scale=100)], axis=0).astype(src)
    got, flat = run(
        FAM,
        "dma_cast",
        [a],
        target,
        mid=mid,
        odt=np.dtype(odt).name if odt is not BF16 else "bfloat16",
    )
    mid_np = {"bfloat16": BF16, "float8_e4m3fn": FP8E4, "float8_e5m2": FP8E5}.get(mid, None)
    if mid == "tfloat32":
        # RNE to 10 mantissa bits, stored in fp32
        u = f32(a).view(np.uint32).astype(np.uint64)
        fin = np.isfinite(f32(a))
        r = ((u + 0xFFF + ((u >> 13) & 1)) & ~np.uint64(0x1FFF)).astype(np.uint32)
        want_mid = np.where(fin, r.view(np.float32), f32(a))
    elif mid_np is not None:
        want_mid = f32(a).astype(mid_np)
    else:
        want_mid = fp32_to(a, mid)
    want = (
        fp32_to(
            want_mid.astype(np.float32)
            if np.dtype(want_mid.dtype).kind == "f" or want_mid.dtype == BF16
            else want_mid.astype(np.float32),
            odt,
        )
        if np.dtype(odt) != want_mid.dtype
        else want_mid
    )
    if np.dtype(odt).kind == "f" and want_mid.dtype.kind in "iu":
        want = f32(want_mid).astype(odt)
    if (
        np.dtype(odt).kind in "iu"
        and want_mid.dtype.kind in "iu"
        and np.dtype(odt) != want_mid.dtype
    ):
        want = fp32_to(f32(want_mid), odt)
    assert_bits(got, want.astype(odt) if odt is not BF16 else want)
    assert_bits(flat, a.reshape(-1, 2))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize("engine", ["unknown", "sync", "scalar"])
def test_dma_copy_hwdge(target, engine):
    a = rnd((4, 9), seed=4)
    got = run(FAM, "dma_modes", [a], target, dge="hwdge", engine=engine)
    assert_bits(got, a)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dge", ["unknown", "none", "swdge"])
def test_dma_copy_dge_modes_static(target, dge):
    a = rnd((4, 9), seed=5)
    assert_bits(run(FAM, "dma_modes", [a], target, dge=dge), a)


# ---------------------------------------------------------------------------- dma_transpose


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize(
    ("shape", "on_chip"),
    [((16, 128), False), ((16, 128), True), ((2, 4, 8), False), ((2, 3, 4, 5), True)],
)
def test_dma_transpose(target, shape, on_chip):
    a = rnd(shape, BF16, seed=6)
    a.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    got = run(FAM, "dma_transpose", [a], target, on_chip=on_chip)
    perm = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}[len(shape)]
    assert_bits(got, np.ascontiguousarray(a.transpose(perm)))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_a_direct_dma_transpose_moves_4_byte_elements(dtype):
    # the 2-byte restriction of the ISA docs is the hardware DGE's and the indirect form's
    a = (np.random.default_rng(8).standard_normal((32, 64)) * 100).astype(dtype)
    got = run(FAM, "dma_transpose", [a], "trn2", on_chip=True)
    assert_bits(got, np.ascontiguousarray(a.T))


def test_dma_transpose_is_not_on_trn1():
    # DMA writes SBUF column-major (a transpose) only from Trn2 on: the Trn1 DMA supports the
    # row-major SBUF layout alone (Hardware §1, "SBUF layouts supported by DMA").
    a = rnd((16, 128), BF16, seed=7)
    with pytest.raises(nkic.CompileError) as e:
        run(FAM, "dma_transpose", [a], "trn1")
    assert [d.code for d in e.value.diagnostics] == ["err_unsupported_on_target"]


# ------------------------------------------------------------------------------ dma_compute


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("on_chip", [False, True])
def test_dma_compute_sum_in_source_order(target, on_chip):
    a = f32([[1e8, 1.0, np.inf, -0.0]])
    b = f32([[-1e8, 1e-8, -np.inf, -0.0]])
    c = f32([[1.0, 1.0, 1.0, -0.0]])
    got = run(FAM, "dma_compute", [a, b, c], target, on_chip=on_chip, scales=(1.0, 1.0, 1.0))
    want = f32(f32(a + b) + c)
    assert_bits(got, want)


# ------------------------------------------------------------------------------ tensor_copy


def _engines(target):
    return ["vector", "gpsimd"] + (["scalar"] if target != "trn1" else [])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("engine", ["vector", "gpsimd", "scalar"])
@pytest.mark.parametrize("odt", ["float32", "bfloat16", "int16", "float8_e5m2"])
def test_tensor_copy_engines_and_casts(target, engine, odt):
    if engine not in _engines(target):
        pytest.skip("ScalarE tensor_copy is v3+")
    x = (
        np.concatenate([SPECIAL.reshape(2, 6), rnd((2, 6), seed=8, scale=1000)]).reshape(4, 3, 4)
        if False
        else None
    )
    x = np.concatenate([SPECIAL, rnd((12,), seed=8, scale=1000)]).reshape(4, 2, 3)
    psum = engine != "gpsimd"
    got = isa(
        "tensor_copy",
        [x],
        {"src": {"t": 0, "buf": "psum" if psum else "sbuf", "p0": 32}},
        {"dst": {"shape": (4, 2, 3), "dtype": odt, "p0": 96}},
        target=target,
        engine=f"eng.{engine}",
    )
    odt_np = {"bfloat16": BF16, "float8_e5m2": FP8E5}.get(odt, odt)
    assert_bits(got, fp32_to(x, odt_np) if odt == "int16" else x.astype(odt_np))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_copy_same_dtype_is_bit_copy(target):
    x = np.array([[0x7FC00001, 0xFFFFFFFF, 0x80000000, 0x00000001]], np.uint32).view(np.float32)
    for engine in _engines(target):
        got = isa(
            "tensor_copy",
            [x],
            {"src": {"t": 0}},
            {"dst": {"shape": (1, 4), "dtype": "float32"}},
            target=target,
            engine=f"eng.{engine}",
        )
        assert_bits(got, x)


# ----------------------------------------------------------------------------------- memset


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("float32", -0.0),
        ("float32", float("nan")),
        ("bfloat16", 1.00390625),
        ("float16", 1e5),
        ("int32", -7),
        ("uint32", 0.0),  # a whole float is the integer it equals
        ("int16", -3.0),
        ("uint8", 255),
        ("int16", -32768),
        ("float8_e4m3fn", 3.0),
    ],
)
@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
def test_memset(target, dtype, value, engine):
    got = run(FAM, "memset", [], target, P=5, F=7, dtype=dtype, value=value, engine=engine, p0=64)
    np_dt = {"bfloat16": BF16, "float8_e4m3fn": FP8E4}.get(dtype, dtype)
    want = np.full(
        (5, 7), f32(value) if np.dtype(np_dt).kind == "f" or np_dt in (BF16, FP8E4) else value
    )
    assert_bits(got, want.astype(np_dt))


@pytest.mark.parametrize("target", TARGETS)
def test_memset_psum(target):
    assert_bits(
        run(FAM, "memset_psum", [], target, P=3, F=5, value=1.5), np.full((3, 5), 1.5, np.float32)
    )


# ------------------------------------------------------------------- tensor_copy_predicated


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("pdt", [np.uint8, np.uint16, np.uint32])
def test_tensor_copy_predicated(target, reverse, pdt):
    src = rnd((6, 2, 4), seed=9)
    src.reshape(-1)[:2] = [np.nan, -0.0]
    old = rnd((6, 2, 4), seed=10)
    pred = (np.random.default_rng(11).integers(0, 3, (6, 2, 4)) * 127).astype(pdt)
    got = isa(
        "tensor_copy_predicated",
        [src, pred, old],
        {"src": {"t": 0, "buf": "psum"}, "predicate": {"t": 1}},
        {"dst": {"shape": (6, 2, 4), "dtype": "float32", "init": 2}},
        target=target,
        reverse_pred=reverse,
    )
    mask = (pred != 0) ^ reverse
    assert_bits(got, np.where(mask, src, old))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_copy_predicated_scalar_src(target):
    old = rnd((4, 8), seed=12)
    pred = (np.arange(32).reshape(4, 8) % 3 == 0).astype(np.uint8)
    got = isa(
        "tensor_copy_predicated",
        [pred, old],
        {"src": -2.5, "predicate": {"t": 0}},
        {"dst": {"shape": (4, 8), "dtype": "float32", "init": 1}},
        target=target,
    )
    assert_bits(got, np.where(pred != 0, f32(-2.5), old))


def _minifloat(x, ebits, mbits, bias, max_finite, overflow):
    """Round fp32 values to a small float format, nearest even, from first principles.
    `overflow`: value for magnitudes that round past max_finite ("inf" or "nan")."""
    out = []
    for v in np.asarray(x, np.float64).reshape(-1):
        if np.isnan(v):
            out.append(np.nan)
            continue
        s = -1.0 if np.signbit(v) else 1.0
        a = abs(v)
        if np.isinf(a):
            out.append(np.copysign(np.inf if overflow == "inf" else np.nan, s))
            continue
        emin = 1 - bias
        e = max(int(np.floor(np.log2(a))) if a > 0 else emin, emin)
        q = 2.0 ** (e - mbits)  # quantum at this binade (subnormals share emin's)
        r = a / q
        fl = np.floor(r)
        rem = r - fl
        n = fl + (1 if rem > 0.5 or (rem == 0.5 and fl % 2 == 1) else 0)
        val = n * q
        if val > max_finite:
            val = np.inf if overflow == "inf" else np.nan
        out.append(np.copysign(val, s))
    return np.array(out, np.float64).reshape(np.shape(x)).astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("mid", "ebits", "mbits", "bias", "maxf", "ovf"),
    [
        ("float8_e4m3", 4, 3, 7, 240.0, "inf"),
        ("float8_e4m3fn", 4, 3, 7, 448.0, "nan"),
        ("float8_e5m2", 5, 2, 15, 57344.0, "inf"),
        ("bfloat16", 8, 7, 127, float(ml_dtypes.finfo(BF16).max), "inf"),
        ("float16", 5, 10, 15, 65504.0, "inf"),
    ],
)
def test_float_narrowing_from_first_principles(target, mid, ebits, mbits, bias, maxf, ovf):
    # midpoints, subnormals, overflow boundaries, signed zeros, specials
    vals = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        maxf,
        -maxf,
        maxf * (1 + 2.0 ** -(mbits + 1)),
        maxf * (1 + 2.0 ** -(mbits + 1)) * 0.999,
        2.0 ** (1 - bias),
        2.0 ** (1 - bias - mbits),
        2.0 ** (1 - bias - mbits) * 0.5,
        2.0 ** (1 - bias - mbits) * 0.75,
        2.0 ** (1 - bias - mbits) * 1.5,
        1 + 2.0 ** -(mbits + 1),
        1 + 3 * 2.0 ** -(mbits + 1),
        -(1 + 2.0 ** -(mbits + 1)),
    ]
    rng = np.random.default_rng(7)
    rand = rng.standard_normal(47) * np.exp2(rng.integers(-12, 12, 47))
    x = f32(np.concatenate([vals, rand])).reshape(4, 16)
    got = run(FAM, "cast_round_trip", [x], target, mid=mid)
    with np.errstate(all="ignore"):
        want = _minifloat(x, ebits, mbits, bias, maxf, ovf)
    # a NaN's payload is the format's; its sign is kept
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert (np.signbit(got[nan]) == np.signbit(want[nan])).all()
    assert_bits(np.where(nan, 0, got), np.where(nan, 0, want))


@pytest.mark.parametrize("target", TARGETS)
def test_compute_operands_through_raw_access_patterns(target):
    a, b = rnd((5, 16), seed=50), rnd((5, 8), seed=51)
    got = run(FAM, "compute_through_ap", [a, b], target)
    odd = a[:, 1::2]  # offset 1, step 2: elements 1, 3, ..., 15 as (2, 4)
    rev = b[:, ::-1]  # offset 7, steps -4 / -1: elements 7, 6, ..., 0 as (2, 4)
    assert_bits(got, f32(odd - rev).reshape(5, 2, 4))


@pytest.mark.parametrize("target", TARGETS)
def test_dma_copy_sbuf_to_sbuf_any_partition(target):
    a = rnd((6, 7), seed=52)
    assert_bits(run(FAM, "dma_sbuf_to_sbuf_shift", [a], target, shift=3), a)
