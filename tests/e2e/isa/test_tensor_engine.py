"""nc_matmul (dtypes, accumulation groups, tiling, transpose, double_row), nc_transpose."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import BF16, FP8E4, FP8E5, TARGETS, assert_bits, f32, isa, rnd, run

FAM = "tensor_engine"


def mm_ref(st, mv, init=None):
    """docs/numerics.md §6 from the spec: exact products rounded to fp32, summed over k in order
    in fp32 from +0; a PSUM value being accumulated onto is added once at the end."""
    st, mv = f32(st.astype(np.float32)), f32(mv.astype(np.float32))
    acc = np.zeros((st.shape[1], mv.shape[1]), np.float32)
    with np.errstate(all="ignore"):
        for k in range(st.shape[0]):
            acc = f32(acc + f32(st[k][:, None] * mv[k][None, :]))
        if init is not None:
            acc = f32(init + acc)
    return acc


def mm_io(st, mv, dst_dtype="float32", **kw):
    ins = {"stationary": {"t": 0}, "moving": {"t": 1}}
    shape = (st.shape[-1], mv.shape[-1])
    outs = {"dst": {"shape": shape, "dtype": dst_dtype, "buf": "psum"}}
    return ins, outs


DTYPES = [
    (np.float32, np.float32),
    (BF16, BF16),
    (np.float16, np.float16),
    (FP8E5, FP8E5),
    (BF16, FP8E5),
    (np.float16, BF16),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("sdt", "mdt"), DTYPES)
def test_nc_matmul_dtypes_partial_K(target, sdt, mdt):
    st = rnd((37, 20), seed=1).astype(sdt)
    mv = rnd((37, 48), seed=2).astype(mdt)
    got = isa("nc_matmul", [st, mv], *mm_io(st, mv), target=target)
    assert_bits(got, mm_ref(st, mv))


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_order_of_summation_and_specials(target):
    # sequential fp32 sum: (1e8 + 1) - 1e8 = 0 in fp32; inf * 0 = NaN; -0 only column -> +0
    st = f32([[1.0, 0.0, -0.0], [1.0, 1.0, -0.0], [1.0, 0.0, -0.0]])
    mv = f32([[1e8, np.inf, 1.0], [1.0, 1.0, 1.0], [-1e8, 1.0, 1.0]])
    got = isa("nc_matmul", [st, mv], *mm_io(st, mv), target=target)
    want = mm_ref(st, mv)
    assert want[0, 0] == 0.0 and np.isnan(want[1, 1]) and not np.signbit(want[2, 2])
    assert_bits(got, want)


def test_nc_matmul_tfloat32_and_fp8_e4m3fn_trn3():
    st = rnd((16, 8), seed=3).astype(FP8E4)
    mv = rnd((16, 12), seed=4).astype(FP8E4)
    assert_bits(isa("nc_matmul", [st, mv], *mm_io(st, mv), target="trn3"), mm_ref(st, mv))


@pytest.mark.parametrize("dst", ["bfloat16", "float32"])
def test_nc_matmul_bf16_psum_trn3_large_n(dst):
    st = rnd((32, 8), BF16, seed=5)
    mv = rnd((32, 1024), BF16, seed=6)
    got = isa("nc_matmul", [st, mv], *mm_io(st, mv, dst), target="trn3")
    want = mm_ref(st, mv)
    assert_bits(got, want.astype(BF16) if dst == "bfloat16" else want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("flags", [(None, None, None), (False, True, True), (None, True, None)])
def test_nc_matmul_accumulation_group(target, flags):
    st, mv = rnd((96, 16), seed=7), rnd((96, 24), seed=8)
    got = run(FAM, "matmul_group", [st, mv], target, chunks=3, flags=flags)
    want = None
    for i in range(3):
        want = mm_ref(st[32 * i : 32 * i + 32], mv[32 * i : 32 * i + 32], want)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_accumulate_false_overwrites(target):
    st, mv = rnd((64, 16), seed=9), rnd((64, 24), seed=10)
    got = run(FAM, "matmul_group", [st, mv], target, chunks=2, flags=(None, False))
    assert_bits(got, mm_ref(st[32:], mv[32:]))


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_accumulation_in_affine_loop(target):
    st, mv = rnd((256, 32), BF16, seed=11), rnd((256, 40), BF16, seed=12)
    got = run(FAM, "matmul_loop", [st, mv], target, chunks=4)
    want = None
    for i in range(4):
        want = mm_ref(st[64 * i : 64 * i + 64], mv[64 * i : 64 * i + 64], want)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_two_interleaved_groups(target):
    st, mv = rnd((64, 8), seed=13), rnd((64, 16), seed=14)
    g0, g1 = run(FAM, "matmul_two_groups", [st, mv], target)
    assert_bits(g0, mm_ref(st[32:], mv[32:], mm_ref(st[:32], mv[:32])))
    assert_bits(g1, mm_ref(st[:32], mv[:32], mm_ref(st[32:], mv[32:])))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("K", "M", "pos", "size", "p0"),
    [
        (64, 128, (64, 0), (64, 128), 64),
        (64, 64, (0, 64), (64, 64), 0),
        (32, 32, (96, 32), (32, 32), 96),
    ],
)
def test_nc_matmul_pe_tiling(target, K, M, pos, size, p0):
    if 32 in size and target == "trn1":
        pytest.skip("4x32 PE tiles are v3+")
    st, mv = rnd((K, M), BF16, seed=15), rnd((K, 64), BF16, seed=16)
    got = run(FAM, "matmul_tiled_pe", [st, mv], target, tile_position=pos, tile_size=size, p0=p0)
    assert_bits(got, mm_ref(st, mv))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16, FP8E5])
def test_nc_matmul_is_transpose_bit_exact(target, dtype):
    x = rnd((16, 24), seed=17).astype(dtype)
    x.reshape(-1)[:4] = np.array([np.nan, -0.0, np.inf, -np.inf]).astype(dtype)
    eye = np.eye(16, dtype=dtype)
    odt = {
        np.dtype(np.float32): "float32",
        np.dtype(BF16): "bfloat16",
        np.dtype(np.float16): "float16",
    }.get(np.dtype(dtype), "uint16")
    ins = {"stationary": {"t": 0}, "moving": {"t": 1}}
    outs = {"dst": {"shape": (24, 16), "dtype": odt, "buf": "psum"}}
    got = isa("nc_matmul", [x, eye], ins, outs, target=target, is_transpose=True)
    want = np.ascontiguousarray(x.T)
    if odt == "uint16":
        want = want.view(np.uint8).astype(np.uint16)
    assert_bits(got, want)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize("dtype", [FP8E5, FP8E4])
def test_nc_matmul_double_row(target, dtype):
    if dtype is FP8E4 and target != "trn3":
        pytest.skip("float8_e4m3fn matmul inputs are trn3 only (legacy e4m3: see below)")
    st = rnd((128, 2, 16), seed=18).astype(dtype)
    mv = rnd((128, 2, 32), seed=19).astype(dtype)
    got = isa(
        "nc_matmul",
        [st, mv],
        {"stationary": {"t": 0}, "moving": {"t": 1}},
        {"dst": {"shape": (16, 32), "dtype": "float32", "buf": "psum"}},
        target=target,
        perf_mode="pm.double_row",
    )
    # contraction over (k, row), k outer
    assert_bits(got, mm_ref(st.reshape(256, 16), mv.reshape(256, 32)))


# ------------------------------------------------------------------------------ nc_transpose


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int8, np.uint16])
def test_nc_transpose_vector_engine(target, dtype):
    x = rnd((20, 2, 16), seed=20, scale=50).astype(dtype)
    if np.dtype(dtype).kind == "f" or dtype is BF16:
        x.reshape(-1)[:3] = np.array([np.nan, -0.0, np.inf]).astype(dtype)
    got = isa(
        "nc_transpose",
        [x],
        {"data": {"t": 0, "buf": "psum"}},
        {
            "dst": {
                "shape": (32, 20),
                "dtype": np.dtype(dtype).name if dtype is not BF16 else "bfloat16",
                "p0": 32,
            }
        },
        target=target,
        engine="eng.vector",
    )
    assert_bits(got, np.ascontiguousarray(x.reshape(20, 32).T))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_nc_transpose_tensor_engine(target, dtype):
    x = rnd((100, 128), seed=21).astype(dtype)
    got = isa(
        "nc_transpose",
        [x],
        {"data": {"t": 0}},
        {
            "dst": {
                "shape": (128, 100),
                "dtype": "float32" if dtype is np.float32 else "bfloat16",
                "buf": "psum",
            }
        },
        target=target,
        engine="eng.tensor",
    )
    assert_bits(got, np.ascontiguousarray(x.T))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_nc_transpose_tensor_engine_nan_inf_bit_exact_v3(target):
    x = rnd((8, 8), seed=22)
    x[1, 2], x[3, 3], x[4, 5] = np.nan, np.inf, -0.0
    got = isa(
        "nc_transpose",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (8, 8), "dtype": "float32", "buf": "psum"}},
        target=target,
        engine="eng.tensor",
    )
    assert_bits(got, np.ascontiguousarray(x.T))


def test_nc_transpose_tensor_engine_trn1_is_identity_matmul():
    # v2: matmul with the identity in fp32 -> a NaN/Inf spreads along its output row
    x = rnd((4, 4), seed=23)
    x[1, 2] = np.inf
    got = isa(
        "nc_transpose",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 4), "dtype": "float32", "buf": "psum"}},
        target="trn1",
        engine="eng.tensor",
    )
    assert_bits(got, mm_ref(x, np.eye(4, dtype=np.float32)))


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_row_tiles_accumulate(target):
    st, mv = rnd((128, 32), BF16, seed=30), rnd((128, 48), BF16, seed=31)
    got = run(FAM, "matmul_row_tiles", [st, mv], target)
    assert_bits(got, mm_ref(st[64:], mv[64:], mm_ref(st[:64], mv[:64])))


@pytest.mark.parametrize("target", TARGETS)
def test_nc_matmul_column_blocks_first_write_per_block(target):
    st, mv = rnd((32, 16), seed=32), rnd((32, 64), seed=33)
    got = run(FAM, "matmul_column_blocks", [st, mv], target, blocks=4)
    want = np.concatenate(
        [
            mm_ref(st, mv[:, 16 * j : 16 * j + 16], mm_ref(st, mv[:, 16 * j : 16 * j + 16]))
            for j in range(4)
        ],
        axis=1,
    )
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("inside", [False, True])
def test_nc_matmul_accumulate_none_over_allocation_lifetime(target, inside):
    st, mv = rnd((32, 8), seed=34), rnd((32, 16), seed=35)
    got = run(FAM, "matmul_reuse_psum_tile", [st, mv], target, rounds=3, inside=inside)
    want, acc = [], None
    for _ in range(3):
        if inside:
            acc = None
        acc = mm_ref(st, mv, acc)
        acc = mm_ref(st, mv, acc)
        want.append(acc)
    assert_bits(got, np.stack(want))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize("double_row", [False, True])
def test_nc_matmul_legacy_float8_e4m3(target, double_row):
    from .test_data_movement import _minifloat

    shape_s, shape_m = ((128, 2, 8), (128, 2, 12)) if double_row else ((64, 8), (64, 12))
    st, mv = rnd(shape_s, seed=40, scale=30), rnd(shape_m, seed=41, scale=30)
    got = run(
        FAM, "matmul_cast_inputs", [st, mv], target, dtype="float8_e4m3", double_row=double_row
    )
    q = lambda x: _minifloat(x, 4, 3, 7, 240.0, "inf")  # noqa: E731
    qs, qm = q(st).reshape(-1, 8), q(mv).reshape(-1, 12)
    assert_bits(got, mm_ref(qs, qm))
