"""Cross-cutting edge cases: integer saturation, NaN handling in casts, negative zero,
subnormals, low-precision destinations of recurrences, bf16 PSUM accumulation (trn3)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import BF16, TARGETS, assert_bits, f32, isa, rnd, run


def sat(x, dtype):
    info = np.iinfo(dtype)
    y = np.nan_to_num(f32(x).astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
    return np.clip(np.rint(y), info.min, info.max).astype(dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("odt", ["int8", "uint8", "int16", "uint16", "int32"])
def test_tensor_scalar_float_to_int_saturates_nan_to_zero(target, odt):
    x = f32(
        [
            [
                0.5,
                1.5,
                2.5,
                -0.5,
                -1.5,
                127.5,
                128.0,
                -129.0,
                70000.0,
                -70000.0,
                np.nan,
                np.inf,
                -np.inf,
                3e9,
                -3e9,
                255.5,
            ]
        ]
    )
    got = isa(
        "tensor_scalar",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": odt}},
        target=target,
        op0="nl.multiply",
        operand0=1.0,
    )
    assert_bits(got, sat(x, odt))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("src", "odt"),
    [(np.int32, "int8"), (np.int32, "uint16"), (np.int16, "uint8"), (np.uint32, "int32")],
)
def test_tensor_copy_int_to_int_through_fp32(target, src, odt):
    info = np.iinfo(src)
    x = np.array(
        [
            [
                0,
                1,
                -1 if info.min < 0 else 2,
                info.max,
                info.min,
                300,
                2**24 + 1 if info.bits == 32 else 77,
                128,
            ]
        ],
        np.int64,
    )
    x = np.clip(x, info.min, info.max).astype(src)
    got = isa(
        "tensor_copy",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": odt}},
        target=target,
        engine="eng.vector",
    )
    assert_bits(got, sat(f32(x), odt))


@pytest.mark.parametrize("target", TARGETS)
def test_negative_zero_arithmetic(target):
    a = f32([[-0.0, -0.0, 0.0, -1.0, 1.0]])
    b = f32([[-0.0, 0.0, -0.0, 0.0, -0.0]])
    for op, fn in (("add", np.add), ("multiply", np.multiply), ("subtract", np.subtract)):
        got = isa(
            "tensor_tensor",
            [a, b],
            {"data1": {"t": 0}, "data2": {"t": 1}},
            {"dst": {"shape": a.shape, "dtype": "float32"}},
            target=target,
            op=f"nl.{op}",
        )
        assert_bits(got, f32(fn(a, b)))
    # -0 survives a cast to bf16 and a copy on every engine
    got = isa(
        "tensor_copy",
        [a],
        {"src": {"t": 0}},
        {"dst": {"shape": a.shape, "dtype": "bfloat16"}},
        target=target,
    )
    assert_bits(got, a.astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
def test_subnormals_are_kept(target):
    tiny = f32([[1e-45, -1e-45, 1e-40, 1.17e-38, 5.9e-39]])
    got = isa(
        "tensor_scalar",
        [tiny],
        {"data": {"t": 0}},
        {"dst": {"shape": tiny.shape, "dtype": "float32"}},
        target=target,
        op0="nl.multiply",
        operand0=0.5,
        op1="nl.add",
        operand1=0.0,
    )
    assert_bits(got, f32(f32(tiny * f32(0.5)) + f32(0.0)))
    got = isa(
        "tensor_copy",
        [tiny],
        {"src": {"t": 0}},
        {"dst": {"shape": tiny.shape, "dtype": "bfloat16"}},
        target=target,
    )
    assert_bits(got, tiny.astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
def test_nan_payload_through_cast_and_copy(target):
    x = np.array([[0x7FC12345, 0xFF812345, 0x7F800001]], np.uint32).view(np.float32)
    same = isa(
        "tensor_copy",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": "float32"}},
        target=target,
        engine="eng.gpsimd",
    )
    assert_bits(same, x)
    got = isa(
        "tensor_copy",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": "bfloat16"}},
        target=target,
    )
    assert np.isnan(got.astype(np.float32)).all()
    assert_bits(got, x.astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
def test_scan_recurrence_stays_fp32_with_bf16_dst(target):
    # the carried value is fp32; only the stored copy is rounded to bf16
    d0 = np.ones((2, 16), np.float32)
    d1 = f32(np.full((2, 16), 1.0 / 3.0))
    got = isa(
        "tensor_tensor_scan",
        [d0, d1],
        {"data0": {"t": 0}, "data1": {"t": 1}, "initial": 0.0},
        {"dst": {"shape": (2, 16), "dtype": "bfloat16"}},
        target=target,
        op0="nl.multiply",
        op1="nl.add",
    )
    r = np.zeros(2, np.float32)
    want = np.zeros((2, 16), np.float32)
    for i in range(16):
        r = f32(f32(d0[:, i] * r) + d1[:, i])
        want[:, i] = r
    assert_bits(got, want.astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
def test_cumulative_sum_fp32_accumulator_bf16_dst(target):
    x = f32(np.full((3, 300), 1.0))
    got = isa(
        "tensor_scalar_cumulative",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": (3, 300), "dtype": "bfloat16"}},
        target=target,
        op0="nl.multiply",
        op1="nl.add",
        imm0=1.0,
    )
    want = f32(np.arange(1, 301)).astype(BF16)  # 257 rounds in bf16, the accumulator does not
    assert_bits(got, np.broadcast_to(want, (3, 300)))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_reduce_add_int32_is_fp32(target):
    x = np.array([[2**24, 1, 1, 1, 1]], np.int32)
    got = isa(
        "tensor_reduce",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (1, 1), "dtype": "int32"}},
        target=target,
        op="nl.add",
        axis=1,
    )
    acc = np.float32(2**24)
    for v in (1, 1, 1, 1):
        acc = f32(acc + np.float32(v))  # 2^24 + 1 rounds back to 2^24 each time
    assert_bits(got, np.array([[int(acc)]], np.int32))


@pytest.mark.parametrize("target", TARGETS)
def test_memset_integer_and_iota_float_rounding(target):
    got = isa(
        "iota",
        [],
        {},
        {"dst": {"shape": (2, 4), "dtype": "float32"}},
        target=target,
        pattern=[[1, 4]],
        offset=2**24 + 1,
        channel_multiplier=2,
    )
    v = (2**24 + 1 + np.arange(4)[None, :] + 2 * np.arange(2)[:, None]).astype(np.float32)
    assert_bits(got, v)


@pytest.mark.parametrize("target", TARGETS)
def test_max8_nan_ranks_first_and_duplicates(target):
    x = f32([[1, 5, 5, np.nan, -np.inf, 3, 2, 9, 0, -1]])
    got = isa(
        "max8",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": (1, 8), "dtype": "float32"}},
        target=target,
    )
    assert_bits(got, f32([[np.nan, 9, 5, 5, 3, 2, 1, 0]]))


def test_bf16_psum_accumulation_trn3():
    # bf16 PSUM: read, add the fp32 sum, round to bf16 at every write
    st = f32(np.ones((64, 2)))
    mv = f32(np.full((64, 3), 1.0 / 64))
    got = run(
        "tensor_engine",
        "matmul_group",
        [st.astype(BF16), (mv * 8.0078125).astype(BF16)],
        "trn3",
        chunks=2,
        flags=(None, None),
        dst_dtype="bfloat16",
    )
    a = st.astype(BF16).astype(np.float32)
    b = (mv * 8.0078125).astype(BF16).astype(np.float32)
    first = np.zeros((2, 3), np.float32)
    for k in range(32):
        first = f32(first + f32(a[k][:, None] * b[k][None, :]))
    first = first.astype(BF16).astype(np.float32)
    second = np.zeros((2, 3), np.float32)
    for k in range(32, 64):
        second = f32(second + f32(a[k][:, None] * b[k][None, :]))
    assert_bits(got, f32(first + second).astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
def test_dropout_integer_data_and_copy_predicated_scalar_cast(target):
    x = np.arange(1, 33, dtype=np.int16).reshape(2, 16)
    got = isa(
        "dropout",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": "int16"}},
        target=target,
        prob=0.0,
    )
    assert_bits(got, x)
    got = isa(
        "dropout",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": "int16"}},
        target=target,
        prob=1.0,
    )
    assert_bits(got, np.zeros_like(x))
    old = np.zeros((2, 16), np.int16)
    pred = np.ones((2, 16), np.uint8)
    got = isa(
        "tensor_copy_predicated",
        [pred, old],
        {"src": 2.5, "predicate": {"t": 0}},
        {"dst": {"shape": (2, 16), "dtype": "int16", "init": 1}},
        target=target,
    )
    assert_bits(got, np.full((2, 16), 2, np.int16))  # RNE of 2.5


@pytest.mark.parametrize("target", TARGETS)
def test_activation_integer_in_out(target):
    x = np.array([[-3, -1, 0, 2, 100]], np.int8)
    got = isa(
        "activation",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": x.shape, "dtype": "uint8"}},
        target=target,
        op="nl.relu",
        scale=3.0,
    )
    assert_bits(got, sat(np.maximum(f32(x) * 3, 0), np.uint8))


@pytest.mark.parametrize("target", TARGETS)
def test_dma_copy_oob_mode_skip_static_is_plain_copy(target):
    a = rnd((3, 5), seed=1)
    assert_bits(run("data_movement", "dma_modes", [a], target, oob="skip"), a)
