"""tensor_reduce, tensor_partition_reduce, tensor_scalar_reduce, tensor_scalar_cumulative,
tensor_tensor_scan, bn_stats, bn_aggr, range_select, select_reduce, exponential and the
VectorE accumulator registers."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32
FP32_MIN = F(-3.4028235e38)


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def fold(op, values, start=None):
    """Left fold in fp32 scalars: ((x0 op x1) op x2) ..., or from `start`."""
    ops = {
        "add": lambda a, b: F(a + b),
        "subtract": lambda a, b: F(a - b),
        "multiply": lambda a, b: F(a * b),
        "maximum": lambda a, b: F(np.nan) if np.isnan(a) or np.isnan(b) else max(a, b),
        "minimum": lambda a, b: F(np.nan) if np.isnan(a) or np.isnan(b) else min(a, b),
    }
    items = [F(v) for v in values]
    acc = items[0] if start is None else F(start)
    for v in items if start is not None else items[1:]:
        with np.errstate(all="ignore"):
            acc = ops[op](acc, v)
    return acc


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize(("axis", "keep"), [((3,), 3), ((2, 3), 2), ((1, 2, 3), 1), (3, 3)])
def test_tensor_reduce_trailing_axes(ctx, op, axis, keep):
    data = np.random.default_rng(0).standard_normal((3, 2, 3, 4)).astype(BF16)
    got = run(ctx, "tensor_reduce", {"data": data}, op=op, axis=axis)["dst"]
    flat = data.astype(F).reshape(data.shape[:keep] + (-1,))
    want = np.empty(flat.shape[:-1], F)
    for index in np.ndindex(*want.shape):
        want[index] = fold(op, flat[index])
    np.testing.assert_array_equal(got, want)


def test_tensor_reduce_sums_sequentially_not_pairwise(ctx):
    data = np.array([[1e8] + [1.0] * 16 + [-1e8]], F)
    got = run(ctx, "tensor_reduce", {"data": data}, op="add", axis=1)["dst"]
    assert got[0] == 0.0  # every +1 is absorbed by 1e8 in fp32


def test_tensor_reduce_keepdims_negate_and_nan(ctx):
    data = np.array([[[1.0, np.nan], [2.0, 3.0]], [[-1.0, -2.0], [0.0, 4.0]]], F)
    got = run(
        ctx, "tensor_reduce", {"data": data}, op="maximum", axis=(1, 2), keepdims=True, negate=True
    )["dst"]
    assert got.shape == (2, 1, 1)
    assert np.isnan(got[0, 0, 0]) and got[1, 0, 0] == -4.0


@pytest.mark.parametrize(
    ("op", "ref"),
    [("logical_and", all), ("logical_or", any), ("logical_xor", lambda v: sum(v) % 2 == 1)],
)
def test_tensor_reduce_logical(ctx, op, ref):
    data = np.array([[0, 1, 2], [3, 4, 5], [0, 0, 0], [0, 0, -1]], F)
    got = run(ctx, "tensor_reduce", {"data": data}, op=op, axis=(1,))["dst"]
    np.testing.assert_array_equal(got, [float(ref([bool(v) for v in row])) for row in data])


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("bitwise_and", np.bitwise_and),
        ("bitwise_or", np.bitwise_or),
        ("bitwise_xor", np.bitwise_xor),
    ],
)
def test_tensor_reduce_bitvec(ctx, op, ref):
    data = np.random.default_rng(1).integers(0, 2**16, (4, 2, 5), dtype=np.int64).astype(np.uint16)
    got = run(ctx, "tensor_reduce", {"data": data}, op=op, axis=(1, 2))["dst"]
    want = [int(ref.reduce(row.reshape(-1))) for row in data]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.uint16


def test_tensor_reduce_rejects_non_trailing_axes(ctx):
    with pytest.raises(ValueError, match="tensor_reduce: axis"):
        run(ctx, "tensor_reduce", {"data": np.zeros((2, 3, 4), F)}, op="add", axis=(1,))
    with pytest.raises(ValueError, match="tensor_reduce: axis"):
        run(ctx, "tensor_reduce", {"data": np.zeros((2, 3), F)}, op="add", axis=0)


@pytest.mark.parametrize("op", ["add", "maximum", "average"])
def test_tensor_partition_reduce_float(ctx, op):
    data = np.random.default_rng(2).standard_normal((5, 2, 3)).astype(F)
    got = run(ctx, "tensor_partition_reduce", {"data": data}, op=op)["dst"]
    want = np.empty((1, 2, 3), F)
    for i, j in np.ndindex(2, 3):
        column = data[:, i, j]
        want[0, i, j] = fold("maximum" if op == "maximum" else "add", column)
        if op == "average":
            want[0, i, j] = F(want[0, i, j] / F(5))
    np.testing.assert_array_equal(got, want)


def test_tensor_partition_reduce_integers_are_exact(ctx):
    data = np.array([[2**30, 7], [2**30, -9], [2**30, 1]], np.int32)
    got = run(ctx, "tensor_partition_reduce", {"data": data}, op="add")["dst"]
    np.testing.assert_array_equal(got, [[3 * 2**30 - 2**32, -1]])
    bits = run(ctx, "tensor_partition_reduce", {"data": data}, op="bitwise_or")["dst"]
    np.testing.assert_array_equal(bits, [[2**30, 7 | -9 | 1]])


def test_tensor_scalar_reduce_with_reduce_cmds(ctx):
    data = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], F)
    first = run(
        ctx,
        "tensor_scalar_reduce",
        {"data": data, "operand0": 2.0},
        op0="multiply",
        reduce_op="add",
    )
    np.testing.assert_array_equal(first["dst"], data * 2)
    np.testing.assert_array_equal(first["reduce_res"], [[12.0], [30.0]])
    second = run(
        ctx,
        "tensor_scalar_reduce",
        {"data": data, "operand0": 2.0},
        op0="multiply",
        reduce_op="add",
        reduce_cmd="reduce",
        reduce_res_negate=True,
    )
    np.testing.assert_array_equal(second["reduce_res"], [[-24.0], [-60.0]])
    loaded = run(
        ctx,
        "tensor_scalar_reduce",
        {"data": data, "operand0": 1.0},
        op0="add",
        reduce_op="maximum",
        reduce_cmd="load_reduce",
        reduce_init=100.0,
    )
    np.testing.assert_array_equal(loaded["reduce_res"], [[100.0], [100.0]])
    np.testing.assert_array_equal(ctx.state["vector_accumulators"][:2], [100.0, 100.0])


def test_tensor_scalar_reduce_partial_partitions_touch_only_their_lanes(ctx):
    run(
        ctx,
        "tensor_scalar_reduce",
        {"data": np.ones((4, 2), F), "operand0": 1.0},
        op0="add",
        reduce_op="add",
    )
    run(
        ctx,
        "tensor_scalar_reduce",
        {"data": np.ones((2, 2), F), "operand0": 0.0},
        op0="add",
        reduce_op="add",
    )
    np.testing.assert_array_equal(ctx.state["vector_accumulators"][:5], [2, 2, 4, 4, 0])


@pytest.mark.parametrize("op1", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_tensor_scalar_cumulative_follows_the_documented_recurrence(ctx, op1):
    src = np.array([[1.0, -2.0, 3.0, 0.5], [2.0, 2.0, -1.0, 4.0]], F)
    got = run(ctx, "tensor_scalar_cumulative", {"src": src, "imm0": 1.5}, op0="multiply", op1=op1)
    identity = {
        "add": 0.0,
        "subtract": 0.0,
        "multiply": 1.0,
        "maximum": -np.inf,
        "minimum": np.inf,
    }[op1]
    binary = {
        "add": lambda v, a: v + a,
        "subtract": lambda v, a: v - a,
        "multiply": lambda v, a: v * a,
        "maximum": max,
        "minimum": min,
    }[op1]
    for p in range(2):
        acc = F(identity)
        for i in range(4):
            acc = F(binary(F(src[p, i] * F(1.5)), acc))
            assert got["dst"][p, i] == acc


def test_tensor_scalar_cumulative_continues_and_loads(ctx):
    src = np.ones((1, 3), F)
    run(ctx, "tensor_scalar_cumulative", {"src": src, "imm0": 0.0}, op0="add", op1="add")
    again = run(
        ctx,
        "tensor_scalar_cumulative",
        {"src": src, "imm0": 0.0},
        op0="add",
        op1="add",
        reduce_cmd="reduce",
    )["dst"]
    np.testing.assert_array_equal(again, [[4, 5, 6]])
    loaded = run(
        ctx,
        "tensor_scalar_cumulative",
        {"src": src, "imm0": 0.0, "imm1": 10.0},
        op0="add",
        op1="add",
        reduce_cmd="load_reduce",
    )["dst"]
    np.testing.assert_array_equal(loaded, [[11, 12, 13]])


@pytest.mark.parametrize("reverse0", [False, True])
@pytest.mark.parametrize("reverse1", [False, True])
def test_tensor_tensor_scan(ctx, reverse0, reverse1):
    rng = np.random.default_rng(3)
    data0 = rng.standard_normal((3, 2, 3)).astype(F)
    data1 = rng.standard_normal((3, 2, 3)).astype(BF16)
    initial = np.array([[1.0], [0.0], [-2.0]], F)
    got = run(
        ctx,
        "tensor_tensor_scan",
        {"data0": data0, "data1": data1, "initial": initial},
        op0="multiply",
        op1="subtract",
        reverse0=reverse0,
        reverse1=reverse1,
    )["dst"]
    for p in range(3):
        prev = initial[p, 0]
        x0, x1 = data0[p].reshape(-1), data1[p].astype(F).reshape(-1)
        for i in range(6):
            t = F(prev * x0[i]) if reverse0 else F(x0[i] * prev)
            prev = F(x1[i] - t) if reverse1 else F(t - x1[i])
            assert got[p].reshape(-1)[i] == prev


def ref_moments(values):
    values = [F(v) for v in values]
    if not values:
        return [F(0), F(0), F(0)]
    total = F(0)
    for v in values:
        total = F(total + v)
    mean = F(total / F(len(values)))
    m2 = F(0)
    for v in values:
        m2 = F(m2 + F(F(v - mean) * F(v - mean)))
    return [F(len(values)), mean, m2]


@pytest.mark.parametrize("free", [1, 2, 7, 8])
def test_bn_stats_even_and_odd_elements(ctx, free):
    data = np.random.default_rng(4).standard_normal((3, free)).astype(BF16)
    got = run(ctx, "bn_stats", {"data": data})["dst"]
    assert got.shape == (3, 6)
    for p in range(3):
        row = data[p].astype(F)
        np.testing.assert_array_equal(got[p], ref_moments(row[0::2]) + ref_moments(row[1::2]))


def test_bn_aggr_combines_to_population_mean_and_variance(ctx):
    data = np.random.default_rng(5).standard_normal((2, 16)).astype(F)
    stats = np.concatenate(
        [
            run(ctx, "bn_stats", {"data": data[:, :8]})["dst"],
            run(ctx, "bn_stats", {"data": data[:, 8:]})["dst"],
        ],
        axis=1,
    )
    got = run(ctx, "bn_aggr", {"data": stats})["dst"]
    np.testing.assert_allclose(got[:, 0], data.astype(np.float64).mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], data.astype(np.float64).var(axis=1), rtol=1e-5)


def test_range_select_keeps_an_index_window_and_reduces_max(ctx):
    on_true = np.arange(12, dtype=F).reshape(2, 6)[:, ::-1].copy()
    bound0 = np.array([[2.0], [0.0]], F)
    bound1 = np.array([[5.0], [1.0]], F)
    got = run(
        ctx,
        "range_select",
        {"on_true_tile": on_true, "bound0": bound0, "bound1": bound1},
        comp_op0="greater_equal",
        comp_op1="less",
        range_start=1,
    )
    for p in range(2):
        for i in range(6):
            keep = bound0[p, 0] <= 1 + i < bound1[p, 0]
            assert got["dst"][p, i] == (on_true[p, i] if keep else FP32_MIN)
    np.testing.assert_array_equal(got["reduce_res"], [[on_true[0, 1]], [FP32_MIN]])


@pytest.mark.parametrize("reverse", [False, True])
def test_select_reduce(ctx, reverse):
    on_true = np.array([[1.0, -5.0, 3.0], [2.0, 8.0, -1.0]], BF16)
    predicate = np.array([[1, 0, 1], [0, 0, 0]], np.uint8)
    on_false = np.array([[-9.0], [0.5]], F)
    got = run(
        ctx,
        "select_reduce",
        {"on_true": on_true, "predicate": predicate, "on_false": on_false},
        reverse_pred=reverse,
        reduce_cmd="reset_reduce",
    )
    pick = (predicate != 0) ^ reverse
    want = np.where(pick, on_true.astype(F), on_false)
    np.testing.assert_array_equal(got["dst"], want)
    np.testing.assert_array_equal(got["reduce_res"], want.max(axis=1, keepdims=True))


def test_exponential_subtracts_max_and_accumulates(ctx3):
    src = np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 10.0]], F)
    max_value = np.array([[2.0], [10.0]], F)
    got = run(ctx3, "exponential", {"src": src, "max_value": max_value}, reduce_cmd="reset_reduce")
    want = np.array(
        [[F(math.exp(F(v - m))) for v in row] for row, m in zip(src, max_value[:, 0])], F
    )
    np.testing.assert_array_equal(got["dst"], want)
    np.testing.assert_array_equal(got["reduce_res"][:, 0], [fold("add", r, 0.0) for r in want])
    idle = run(ctx3, "exponential", {"src": src}, reduce_cmd="idle")
    np.testing.assert_array_equal(idle["reduce_res"], got["reduce_res"])


def test_unknown_reduce_cmd_is_rejected(ctx):
    with pytest.raises(ValueError, match="unsupported reduce_cmd"):
        run(
            ctx,
            "select_reduce",
            {
                "on_true": np.ones((1, 2), F),
                "predicate": np.ones((1, 2), np.uint8),
                "on_false": 0.0,
            },
            reduce_cmd="bogus",
        )
