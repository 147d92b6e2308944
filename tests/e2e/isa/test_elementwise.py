"""tensor_tensor, tensor_scalar, scalar_tensor_tensor, reciprocal, exponential end to end."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import BF16, TARGETS, assert_bits, f32, isa, rnd

SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -3e38, 3e38, 65504.0, 2.5],
    np.float32,
)


def special(shape, seed=0):
    x = rnd(shape, seed=seed)
    flat = x.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return x


def _truth(x):
    return x != 0  # NaN is true


ARITH = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": lambda x, y: f32(x == y),
    "not_equal": lambda x, y: f32(x != y),
    "greater_equal": lambda x, y: f32(x >= y),
    "greater": lambda x, y: f32(x > y),
    "less_equal": lambda x, y: f32(x <= y),
    "less": lambda x, y: f32(x < y),
    "logical_and": lambda x, y: f32(_truth(x) & _truth(y)),
    "logical_or": lambda x, y: f32(_truth(x) | _truth(y)),
    "logical_xor": lambda x, y: f32(_truth(x) ^ _truth(y)),
}


def io(shape, dtype, n=2, psum=(), p0=0):
    ins = {}
    names = ["data1", "data2"][:n]
    for i, name in enumerate(names):
        ins[name] = {"t": i, "buf": "psum" if name in psum else "sbuf", "p0": p0}
    outs = {"dst": {"shape": shape, "dtype": dtype, "p0": p0}}
    return ins, outs


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", sorted(ARITH))
def test_tensor_tensor_arith_fp32_special_values(target, op):
    a = special((8, 12), 1)
    b = np.roll(special((8, 12), 2), 5)
    ins, outs = io((8, 12), "float32", psum=("data2",))
    with np.errstate(all="ignore"):
        want = f32(ARITH[op](a, b))
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op=f"nl.{op}")
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("odt", ["bfloat16", "float16", "int8", "uint8"])
def test_tensor_tensor_output_cast_partial_partitions_4d(target, odt):
    # 5 partitions starting at partition 32, a 4-D free pattern; result rounded once to odt
    shape = (5, 2, 3, 4)
    a, b = rnd(shape, seed=3, scale=60), rnd(shape, BF16, seed=4, scale=60)
    ins, outs = io(shape, odt, p0=32)
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op="nl.multiply")
    prod = a * b.astype(np.float32)
    if odt in ("int8", "uint8"):
        info = np.iinfo(odt)
        want = np.clip(np.rint(prod), info.min, info.max).astype(odt)
    else:
        want = prod.astype(BF16 if odt == "bfloat16" else odt)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "op", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
)
@pytest.mark.parametrize("dtype", ["int32", "uint16", "int8"])
def test_tensor_tensor_bitvec_raw_bits(target, op, dtype):
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (4, 16), endpoint=True).astype(dtype)
    if "shift" in op:
        b = rng.integers(0, info.bits, (4, 16)).astype(dtype)
    else:
        b = rng.integers(info.min, info.max, (4, 16), endpoint=True).astype(dtype)
    ins, outs = io((4, 16), dtype)
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op=f"nl.{op}", engine="eng.vector")
    u = f"uint{info.bits}"
    x, y = a.view(u).astype(np.uint64), b.view(u).astype(np.uint64)
    fn = {
        "bitwise_and": np.bitwise_and,
        "bitwise_or": np.bitwise_or,
        "bitwise_xor": np.bitwise_xor,
        "left_shift": np.left_shift,
        "right_shift": np.right_shift,
    }[op]
    want = (fn(x, y) & np.uint64(2**info.bits - 1)).astype(u).view(dtype)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum"])
def test_tensor_tensor_int32_gpsimd_exact_wraparound(target, op):
    a = np.array([[2**31 - 1, 2**24 + 1, -7, -(2**31)]], np.int32)
    b = np.array([[1, 1, 3, -1]], np.int32)
    ins, outs = io((1, 4), "int32")
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op=f"nl.{op}", engine="eng.gpsimd")
    fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum}[
        op
    ]
    want = fn(a.astype(np.int64), b.astype(np.int64))
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_tensor_int32_vector_is_fp32(target):
    a = np.array([[2**24 + 1, 7, 2**31 - 1, -5]], np.int32)
    b = np.array([[0, 2, 1000, 0]], np.int32)
    ins, outs = io((1, 4), "int32")
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op="nl.add", engine="eng.vector")
    s = a.astype(np.float32) + b.astype(np.float32)
    want = np.clip(np.rint(s.astype(np.float64)), -(2**31), 2**31 - 1).astype(np.int32)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_tensor_power_gpsimd(target):
    a = np.abs(rnd((4, 8), seed=6)) + 0.5
    b = rnd((4, 8), seed=7)
    ins, outs = io((4, 8), "float32")
    got = isa("tensor_tensor", [a, b], ins, outs, target=target, op="nl.power", engine="eng.gpsimd")
    want = f32(np.power(a.astype(np.float64), b.astype(np.float64)))
    assert_bits(got, want)


def test_tensor_tensor_abs_max_abs_min_trn3():
    a = np.array([[-3.0, 2.0, -2.0, 0.0, np.nan, 5.0]], np.float32)
    b = np.array([[1.0, -2.0, 2.0, -0.0, 1.0, -7.0]], np.float32)
    ins, outs = io((1, 6), "float32")
    gmax = isa("tensor_tensor", [a, b], ins, outs, target="trn3", op="nl.abs_max")
    gmin = isa("tensor_tensor", [a, b], ins, outs, target="trn3", op="nl.abs_min")
    # ties -> y (the second operand)
    assert_bits(gmax[:, :4], f32([[-3.0, -2.0, 2.0, -0.0]]))
    assert_bits(gmin[:, :4], f32([[1.0, -2.0, 2.0, -0.0]]))
    assert_bits(gmax[:, 5:], f32([[-7.0]]))


# ---------------------------------------------------------------------------- tensor_scalar


def _ts_ref(x, op0, s0, rev0, op1, s1, rev1):
    def ap(op, u, v, rev):
        if rev:
            u, v = v, u
        return f32(ARITH[op](u, v))

    with np.errstate(all="ignore"):
        t = ap(op0, x, s0, rev0)
        if op1 is not None:
            t = ap(op1, t, s1, rev1)
    return t


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("op0", "rev0", "op1", "rev1"),
    [
        ("subtract", True, "multiply", False),
        ("subtract", False, "subtract", True),
        ("maximum", False, "minimum", False),
        ("multiply", False, None, False),
        ("greater", True, "logical_xor", False),
    ],
)
def test_tensor_scalar_immediates_and_reverse(target, op0, rev0, op1, rev1):
    x = special((6, 3, 5), 8)
    attrs = dict(op0=f"nl.{op0}", operand0=2.5, reverse0=rev0)
    if op1 is not None:
        attrs.update(op1=f"nl.{op1}", operand1=-0.75, reverse1=rev1)
    got = isa(
        "tensor_scalar",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (6, 3, 5), "dtype": "float32"}},
        target=target,
        **attrs,
    )
    want = _ts_ref(x, op0, f32(2.5), rev0, op1, f32(-0.75), rev1)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_scalar_per_partition_operands_psum_bf16_out(target):
    x = rnd((16, 10), seed=9, scale=3)
    s0 = rnd((16, 1), seed=10)
    s1 = rnd((16, 1), seed=11)
    got = isa(
        "tensor_scalar",
        [x, s0, s1],
        {
            "data": {"t": 0, "buf": "psum"},
            "operand0": {"t": 1},
            "operand1": {"t": 2, "buf": "psum"},
        },
        {"dst": {"shape": (16, 10), "dtype": "bfloat16", "p0": 64}},
        target=target,
        op0="nl.multiply",
        op1="nl.add",
        reverse1=True,
    )
    want = f32(f32(x * s0) + s1).astype(BF16)
    assert_bits(got, want)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_tensor_scalar_scalar_engine(target):
    x = rnd((8, 8), seed=12)
    got = isa(
        "tensor_scalar",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (8, 8), "dtype": "float32"}},
        target=target,
        op0="nl.multiply",
        operand0=3.0,
        op1="nl.add",
        operand1=1.0,
        engine="eng.scalar",
    )
    assert_bits(got, f32(f32(x * f32(3.0)) + f32(1.0)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("op0", "s0", "op1", "s1"),
    [
        ("bitwise_and", 0x0F0F, "left_shift", 3),
        ("right_shift", 4, "bitwise_xor", -1),
        ("invert", 0, None, None),
    ],
)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16"])
def test_tensor_scalar_bitvec_integers(target, op0, s0, op1, s1, dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(13).integers(info.min, info.max, (4, 9), endpoint=True).astype(dtype)
    attrs = dict(op0=f"nl.{op0}", operand0=s0)
    if op1:
        attrs.update(op1=f"nl.{op1}", operand1=s1)
    got = isa(
        "tensor_scalar",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 9), "dtype": dtype}},
        target=target,
        **attrs,
    )
    mask = np.uint64(2**info.bits - 1)
    u = x.view(f"uint{info.bits}").astype(np.uint64)

    def step(op, v, s):
        s = np.uint64(s & 0xFFFFFFFFFFFFFFFF)
        return {
            "bitwise_and": lambda: v & s,
            "bitwise_xor": lambda: v ^ s,
            "left_shift": lambda: (v << s) & mask,
            "right_shift": lambda: v >> s,
            "invert": lambda: ~v & mask,
        }[op]() & mask

    r = step(op0, u, s0)
    if op1:
        r = step(op1, r, s1)
    assert_bits(got, r.astype(f"uint{info.bits}").view(dtype))


# ---------------------------------------------------------------------- scalar_tensor_tensor


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rev", [(False, False), (True, True)])
def test_scalar_tensor_tensor(target, rev):
    x = special((8, 2, 6), 14)
    y = rnd((8, 2, 6), seed=15)
    s = rnd((8, 1), seed=16)
    got = isa(
        "scalar_tensor_tensor",
        [x, s, y],
        {"data": {"t": 0}, "operand0": {"t": 1}, "operand1": {"t": 2, "buf": "psum"}},
        {"dst": {"shape": (8, 2, 6), "dtype": "float32"}},
        target=target,
        op0="nl.subtract",
        op1="nl.multiply",
        reverse0=rev[0],
        reverse1=rev[1],
    )
    s3 = s.reshape(8, 1, 1)
    with np.errstate(all="ignore"):
        t = f32(s3 - x) if rev[0] else f32(x - s3)
        want = f32(y * t) if rev[1] else f32(t * y)
    assert_bits(got, want)


# ------------------------------------------------------------------------------ reciprocal


@pytest.mark.parametrize("target", TARGETS)
def test_reciprocal_vector(target):
    x = special((4, 12), 17)
    got = isa(
        "reciprocal",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 12), "dtype": "float32"}},
        target=target,
    )
    with np.errstate(all="ignore"):
        want = f32(np.float32(1) / x)
    assert_bits(got, want)


# ----------------------------------------------------------------------------- exponential


def test_exponential_trn3_with_running_sum():
    x = rnd((8, 16), seed=18, scale=2)
    mx = x.max(axis=1, keepdims=True)
    got, rs = isa(
        "exponential",
        [x, mx],
        {"src": {"t": 0}, "max_value": {"t": 1}},
        {
            "dst": {"shape": (8, 16), "dtype": "float32"},
            "reduce_res": {"shape": (8, 1), "dtype": "float32"},
        },
        target="trn3",
        reduce_cmd="rc.reset_reduce",
    )
    e = f32(np.exp(f32(x - mx).astype(np.float64)))
    assert_bits(got, e)
    acc = np.zeros((8, 1), np.float32)
    for j in range(16):
        acc = f32(acc + e[:, j : j + 1])
    assert_bits(rs, acc)


def test_exponential_trn3_scalar_max_bf16_out():
    x = special((4, 12), 19)
    got = isa(
        "exponential",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": (4, 12), "dtype": "bfloat16"}},
        target="trn3",
        max_value=1.5,
    )
    with np.errstate(all="ignore"):
        want = f32(np.exp(f32(x - f32(1.5)).astype(np.float64))).astype(BF16)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_scalar_rsqrt_on_gpsimd(target):
    x = np.abs(rnd((4, 8), seed=20)) + f32(1e-3)
    x[0, :3] = [0.0, np.inf, 4.0]
    got = isa(
        "tensor_scalar",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 8), "dtype": "float32"}},
        target=target,
        op0="nl.rsqrt",
        operand0=0.0,
        engine="eng.gpsimd",
    )
    with np.errstate(divide="ignore"):
        want = f32(1.0 / np.sqrt(x.astype(np.float64)))
    assert_bits(got, want)
