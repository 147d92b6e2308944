"""tensor_reduce, tensor_partition_reduce, tensor_scalar_reduce, tensor_scalar_cumulative,
tensor_tensor_scan, bn_stats, bn_aggr."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import BF16, TARGETS, assert_bits, f32, isa, rnd, run

IDENT = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}
BIN = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def fold(op, rows):
    """Sequential left fold in fp32 over the last axis (docs/numerics.md §4)."""
    rows = f32(rows)
    acc = rows[..., 0]
    with np.errstate(all="ignore"):
        for j in range(1, rows.shape[-1]):
            acc = f32(BIN[op](acc, rows[..., j]))
    return acc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize(
    ("axis", "keepdims"), [((3,), False), ((2, 3), True), ((1, 2, 3), False), (3, True)]
)
def test_tensor_reduce_axes(target, op, axis, keepdims):
    x = rnd((5, 2, 3, 4), seed=1, scale=3)
    x[0, 0, 0, 0], x[1, 1, 1, 1], x[2, 0, 2, 3] = np.nan, np.inf, -0.0
    ax = (axis,) if isinstance(axis, int) else axis
    kept = [1 if i in ax else s for i, s in enumerate(x.shape)]
    oshape = tuple(kept) if keepdims else tuple(s for i, s in enumerate(x.shape) if i not in ax)
    if len(oshape) == 1:
        oshape = oshape + (1,)
    got = isa(
        "tensor_reduce",
        [x],
        {"data": {"t": 0, "p0": 64}},
        {"dst": {"shape": oshape, "dtype": "float32"}},
        target=target,
        op=f"nl.{op}",
        axis=axis,
        keepdims=keepdims,
    )
    lead = x.shape[: 4 - len(ax)]
    want = fold(op, x.reshape(lead + (-1,)))
    assert_bits(got, want.reshape(oshape))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_reduce_negate_bf16_out(target):
    x = rnd((7, 33), seed=2)
    got = isa(
        "tensor_reduce",
        [x],
        {"data": {"t": 0, "buf": "psum"}},
        {"dst": {"shape": (7, 1), "dtype": "bfloat16"}},
        target=target,
        op="nl.add",
        axis=1,
        negate=True,
    )
    assert_bits(got, (-fold("add", x)).reshape(7, 1).astype(BF16))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_tensor_reduce_bitvec(target, op):
    x = np.random.default_rng(3).integers(-(2**31), 2**31 - 1, (4, 9)).astype(np.int32)
    got = isa(
        "tensor_reduce",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 1), "dtype": "int32"}},
        target=target,
        op=f"nl.{op}",
        axis=1,
    )
    fn = {
        "bitwise_and": np.bitwise_and,
        "bitwise_or": np.bitwise_or,
        "bitwise_xor": np.bitwise_xor,
    }[op]
    assert_bits(got, fn.reduce(x, axis=1).reshape(4, 1))


# ---------------------------------------------------------------------- tensor_partition_reduce


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["add", "average", "maximum"])
def test_tensor_partition_reduce_float(target, op):
    x = rnd((9, 2, 5), seed=4)
    x[3, 0, 0] = -0.0
    got = isa(
        "tensor_partition_reduce",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (1, 2, 5), "dtype": "float32"}},
        target=target,
        op=f"nl.{op}",
    )
    acc = x[0]
    for p in range(1, 9):
        acc = f32(np.maximum(acc, x[p]) if op == "maximum" else acc + x[p])
    if op == "average":
        acc = f32(acc / np.float32(9))
    assert_bits(got, acc.reshape(1, 2, 5))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["add", "bitwise_or", "bitwise_and", "maximum"])
def test_tensor_partition_reduce_int32_exact(target, op):
    x = np.array([[2**31 - 1, 5, -3], [1, 2**24 + 1, -(2**31)], [0x0F0F, 7, 1]], np.int32)
    got = isa(
        "tensor_partition_reduce",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (1, 3), "dtype": "int32"}},
        target=target,
        op=f"nl.{op}",
    )
    if op == "add":
        want = ((x.astype(np.int64).sum(0) + 2**31) % 2**32 - 2**31).astype(np.int32)
    else:
        want = {"bitwise_or": np.bitwise_or, "bitwise_and": np.bitwise_and, "maximum": np.maximum}[
            op
        ].reduce(x, 0)
    assert_bits(got, want.reshape(1, 3))


# ------------------------------------------------------------------------ tensor_scalar_reduce


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rop", ["add", "multiply", "maximum", "minimum"])
def test_tensor_scalar_reduce(target, rop):
    x = rnd((6, 3, 4), seed=5)
    s = rnd((6, 1), seed=6)
    got, res = isa(
        "tensor_scalar_reduce",
        [x, s],
        {"data": {"t": 0}, "operand0": {"t": 1}},
        {
            "dst": {"shape": (6, 3, 4), "dtype": "bfloat16"},
            "reduce_res": {"shape": (6, 1), "dtype": "float32"},
        },
        target=target,
        op0="nl.subtract",
        reduce_op=f"nl.{rop}",
    )
    y = f32(x - s.reshape(6, 1, 1))
    assert_bits(got, y.astype(BF16))
    # the reduction sees the fp32 results, starting from the op's identity
    acc = np.full((6,), IDENT[rop], np.float32)
    flat = y.reshape(6, -1)
    for j in range(flat.shape[1]):
        acc = f32(BIN[rop](acc, flat[:, j]))
    assert_bits(res, acc.reshape(6, 1))


# -------------------------------------------------------------------- tensor_scalar_cumulative


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op1", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("cmd", ["reset_reduce", "load_reduce"])
def test_tensor_scalar_cumulative(target, op1, cmd):
    x = rnd((4, 10), seed=7)
    attrs = dict(op0="nl.multiply", op1=f"nl.{op1}", imm0=1.5, reduce_cmd=f"rc.{cmd}")
    if cmd == "load_reduce":
        attrs["imm1"] = 0.25
    got = isa(
        "tensor_scalar_cumulative",
        [x],
        {"src": {"t": 0}},
        {"dst": {"shape": (4, 10), "dtype": "float32"}},
        target=target,
        **attrs,
    )
    acc = np.full((4,), IDENT[op1] if cmd == "reset_reduce" else 0.25, np.float32)
    want = np.zeros_like(x)
    for i in range(10):
        v = f32(x[:, i] * np.float32(1.5))
        acc = f32(BIN[op1](v, acc))  # acc = op1(op0(src, imm0), acc)
        want[:, i] = acc
    assert_bits(got, want)


# -------------------------------------------------------------------------- tensor_tensor_scan


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("op0", "op1", "rev0", "rev1"),
    [
        ("multiply", "add", False, False),
        ("subtract", "subtract", True, True),
        ("maximum", "multiply", False, True),
    ],
)
def test_tensor_tensor_scan(target, op0, op1, rev0, rev1):
    d0, d1 = rnd((5, 2, 6), seed=8), rnd((5, 2, 6), seed=9)
    init = rnd((5, 1), seed=10)
    got = isa(
        "tensor_tensor_scan",
        [d0, d1, init],
        {"data0": {"t": 0}, "data1": {"t": 1, "buf": "psum"}, "initial": {"t": 2}},
        {"dst": {"shape": (5, 2, 6), "dtype": "float32"}},
        target=target,
        op0=f"nl.{op0}",
        op1=f"nl.{op1}",
        reverse0=rev0,
        reverse1=rev1,
    )
    a, b = d0.reshape(5, -1), d1.reshape(5, -1)
    r = init[:, 0]
    out = np.zeros_like(a)
    for i in range(a.shape[1]):
        t = f32(BIN[op0](r, a[:, i]) if rev0 else BIN[op0](a[:, i], r))
        r = f32(BIN[op1](b[:, i], t) if rev1 else BIN[op1](t, b[:, i]))
        out[:, i] = r
    assert_bits(got, out.reshape(5, 2, 6))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_tensor_scan_scalar_initial(target):
    d0, d1 = rnd((3, 8), seed=11), rnd((3, 8), seed=12)
    got = isa(
        "tensor_tensor_scan",
        [d0, d1],
        {"data0": {"t": 0}, "data1": {"t": 1}, "initial": 2.0},
        {"dst": {"shape": (3, 8), "dtype": "float32"}},
        target=target,
        op0="nl.multiply",
        op1="nl.add",
    )
    r = np.full((3,), 2.0, np.float32)
    out = np.zeros_like(d0)
    for i in range(8):
        r = f32(f32(d0[:, i] * r) + d1[:, i])
        out[:, i] = r
    assert_bits(got, out)


# ------------------------------------------------------------------------- bn_stats / bn_aggr


def _stats(v):
    n = np.float32(v.shape[-1])
    if v.shape[-1] == 0:
        return (
            np.zeros(v.shape[:-1], np.float32),
            np.zeros(v.shape[:-1], np.float32),
            np.zeros(v.shape[:-1], np.float32),
        )
    s = v[..., 0]
    for j in range(1, v.shape[-1]):
        s = f32(s + v[..., j])
    mean = f32(s / n)
    m2 = np.zeros_like(mean)
    for j in range(v.shape[-1]):
        d = f32(v[..., j] - mean)
        m2 = f32(m2 + f32(d * d))
    return np.full_like(mean, n), mean, m2


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("F", [1, 7, 64])
def test_bn_stats(target, F):
    x = rnd((6, F), seed=13, scale=4) + 3
    got = isa(
        "bn_stats",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (6, 6), "dtype": "float32"}},
        target=target,
    )
    ce, me, ve = _stats(x[:, 0::2])
    co, mo, vo = _stats(x[:, 1::2])
    assert_bits(got, np.stack([ce, me, ve, co, mo, vo], axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_bn_aggr(target):
    c = f32([[3, 2, 4], [0, 5, 1]])
    m = rnd((2, 3), seed=14)
    v = np.abs(rnd((2, 3), seed=15)) * c
    trip = np.stack([c, m, v], axis=2).reshape(2, 9)
    got = isa(
        "bn_aggr",
        [trip],
        {"data": {"t": 0}},
        {"dst": {"shape": (2, 2), "dtype": "float32"}},
        target=target,
    )
    want = []
    for p in range(2):
        n = np.float32(0)
        for i in range(3):
            n = f32(n + c[p, i])
        s = np.float32(0)
        for i in range(3):
            s = f32(s + f32(c[p, i] * m[p, i]))
        mean = f32(s / n)
        m2 = np.float32(0)
        for i in range(3):
            m2 = f32(m2 + v[p, i])
        for i in range(3):
            d = f32(m[p, i] - mean)
            m2 = f32(m2 + f32(c[p, i] * f32(d * d)))
        want.append([mean, f32(m2 / n)])
    assert_bits(got, f32(want))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("cmd", ["reduce", "reset_reduce"])
def test_tensor_scalar_cumulative_continues_from_vector_accumulators(target, cmd):
    x, y = rnd((4, 6), seed=20), rnd((4, 6), seed=21)
    d0, d1 = run("accumulators", "cumulative_sequence", [x, y], target, cmd=cmd)
    acc = np.zeros(4, np.float32)
    w0 = np.zeros_like(x)
    for i in range(6):
        acc = f32(f32(x[:, i] + f32(0)) + acc)
        w0[:, i] = acc
    assert_bits(d0, w0)
    if cmd == "reset_reduce":
        acc = np.zeros(4, np.float32)
    w1 = np.zeros_like(y)
    for i in range(6):
        acc = f32(f32(y[:, i] + f32(0)) + acc)
        w1[:, i] = acc
    assert_bits(d1, w1)


def test_exponential_running_sum_across_instructions_trn3():
    x, y = rnd((4, 6), seed=22), rnd((4, 6), seed=23)
    res = run("accumulators", "exponential_sequence", [x, y], "trn3")
    acc = np.zeros(4, np.float32)
    for data in (x, y):
        e = f32(np.exp(f32(data - f32(0)).astype(np.float64)))
        for col in e.T:
            acc = f32(acc + col)
    assert_bits(res, acc.reshape(4, 1))
