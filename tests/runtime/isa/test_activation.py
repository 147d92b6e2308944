"""activation, activation_reduce, activate2: every function of ISA §3 (exact value
rounded once to fp32), scale/bias, the ScalarE accumulators and reduce_cmd."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


REFERENCES = {
    "copy": lambda x: x,
    "square": lambda x: x * x,
    "sigmoid": sigmoid,
    "relu": lambda x: max(x, 0.0),
    "gelu": lambda x: x * phi(x),
    "gelu_dx": lambda x: phi(x) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi),
    "gelu_apprx_tanh": lambda x: (
        0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    ),
    "gelu_apprx_sigmoid": lambda x: x * sigmoid(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: (
        sigmoid(1.702 * x) * (1 + 1.702 * x * (1 - sigmoid(1.702 * x)))
    ),
    "silu": lambda x: x * sigmoid(x),
    "silu_dx": lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x))),
    "tanh": math.tanh,
    "softplus": softplus,
    "mish": lambda x: x * math.tanh(softplus(x)),
    "erf": math.erf,
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x),
    "exp": math.exp,
    "log": math.log,
    "sin": math.sin,
    "arctan": math.atan,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1 / math.sqrt(x),
    "reciprocal": lambda x: 1 / x,
    "sign": lambda x: float((x > 0) - (x < 0)),
    "abs": abs,
}

POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}


def inputs_for(op):
    values = [-3.0, -1.25, -0.5, -1e-3, 0.25, 0.5, 1.0, 2.0, 3.0, 0.1]
    if op in POSITIVE_ONLY:
        values = [abs(v) for v in values]
    return np.array(values, F).reshape(2, 5)


def close_to_correctly_rounded(got, exact):
    """`got` equals the fp32 rounding of the float64 value, or is 1 ulp away when the
    float64 value itself sits within a float64 rounding error of an fp32 midpoint."""
    want = np.float64(exact).astype(F)
    assert got == want or abs(int(F(got).view(np.int32)) - int(want.view(np.int32))) <= 1


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_every_activation_function(ctx, op):
    data = inputs_for(op)
    got = run(ctx, "activation", {"data": data}, op=op)["dst"]
    assert got.dtype == F and got.shape == data.shape
    for value, out in zip(data.reshape(-1), got.reshape(-1)):
        close_to_correctly_rounded(out, REFERENCES[op](float(value)))


def test_exact_functions_are_bit_exact(ctx):
    data = np.array([[1.5, -2.25, 0.0, -0.0, 3.0, 7.0]], F)
    for op, want in [
        ("copy", data),
        ("abs", np.abs(data)),
        ("relu", np.maximum(data, 0)),
        ("square", data * data),
    ]:
        np.testing.assert_array_equal(run(ctx, "activation", {"data": data}, op=op)["dst"], want)


def test_sin_has_no_range_reduction(ctx):
    data = np.array([[9.0, -9.0, math.pi, 3.5, -4.0, 1.0]], F)
    got = run(ctx, "activation", {"data": data}, op="sin")["dst"][0]
    assert abs(got[0] - 27.65) < 0.01 and abs(got[1] + 27.65) < 0.01
    for x, out in zip(data[0].astype(np.float64), got):
        if abs(x) <= math.pi:
            close_to_correctly_rounded(out, math.sin(x))
        else:
            t = x - math.copysign(math.pi, x)
            close_to_correctly_rounded(out, -t + t**3 / 6)


def test_special_values(ctx):
    data = np.array([[np.nan, np.inf, -np.inf, 0.0]], F)
    exp = run(ctx, "activation", {"data": data}, op="exp")["dst"][0]
    assert np.isnan(exp[0]) and exp[1] == np.inf and exp[2] == 0 and exp[3] == 1
    sigmoid_ = run(ctx, "activation", {"data": data}, op="sigmoid")["dst"][0]
    assert sigmoid_[1] == 1 and sigmoid_[2] == 0
    log = run(ctx, "activation", {"data": np.array([[0.0, -1.0]], F)}, op="log")["dst"][0]
    assert log[0] == -np.inf and np.isnan(log[1])


def test_scale_and_bias_are_two_fp32_roundings(ctx):
    data = np.array([[1 + 2**-23, 3.0], [2.0, -1.0]], F)
    scale = np.array([[1 + 2**-23], [0.5]], F)
    bias = np.array([[-1.0], [0.25]], BF16)
    got = run(ctx, "activation", {"data": data, "scale": scale, "bias": bias}, op="copy")["dst"]
    want = (data * scale) + bias.astype(F)
    np.testing.assert_array_equal(got, want)
    immediate = run(ctx, "activation", {"data": data, "bias": 0.5}, op="copy", scale=2.0)["dst"]
    np.testing.assert_array_equal(immediate, data * 2 + F(0.5))


def test_accumulators_follow_reduce_cmd(ctx):
    data = np.array([[1.0, 2.0], [3.0, 4.0]], F)
    first = run(
        ctx, "activation", {"data": data}, op="copy", reduce_op="add", reduce_cmd="reset_reduce"
    )
    np.testing.assert_array_equal(first["reduce_res"], [[3.0], [7.0]])
    second = run(
        ctx, "activation", {"data": data}, op="square", reduce_op="add", reduce_cmd="reduce"
    )
    np.testing.assert_array_equal(second["reduce_res"], [[8.0], [32.0]])
    idle = run(ctx, "activation", {"data": data}, op="exp")
    np.testing.assert_array_equal(idle["reduce_res"], [[8.0], [32.0]])
    reset = run(ctx, "activation", {"data": data}, op="exp", reduce_cmd="reset")
    np.testing.assert_array_equal(reset["reduce_res"], [[0.0], [0.0]])
    np.testing.assert_array_equal(ctx.state["scalar_accumulators"][:3], [0, 0, 0])


def test_accumulator_sums_in_element_order(ctx):
    data = np.array([[1e8, 1.0, 1.0, -1e8]], F)
    got = run(ctx, "activation_reduce", {"data": data}, op="copy", reduce_op="add")
    assert got["reduce_res"][0, 0] == 0.0


def test_activation_reduce_resets_then_reduces(ctx):
    data = np.array([[0.0, 1.0, 2.0]], F)
    run(ctx, "activation", {"data": data}, op="copy", reduce_op="add", reduce_cmd="reset_reduce")
    got = run(ctx, "activation_reduce", {"data": data, "bias": 1.0}, op="exp", reduce_op="add")
    want = F(0)
    for v in data[0]:
        want = F(want + F(math.exp(float(F(v + 1)))))
    assert got["reduce_res"][0, 0] == want
    np.testing.assert_array_equal(got["dst"], np.exp(data.astype(np.float64) + 1).astype(F))


@pytest.mark.parametrize(
    ("op0", "op1", "reverse0", "ref"),
    [
        ("multiply", "add", False, lambda x, a, b: F(F(x * a) + b)),
        ("multiply", "subtract", False, lambda x, a, b: F(F(x * a) - b)),
        ("subtract", "bypass", True, lambda x, a, b: F(a - x)),
        ("add", None, False, lambda x, a, b: F(x + a)),
        ("bypass", "bypass", False, lambda x, a, b: x),
    ],
)
def test_activate2_pipeline(ctx3, op0, op1, reverse0, ref):
    data = np.array([[1.5, -2.0, 0.25], [4.0, 0.0, -1.0]], F)
    imm0 = np.array([[2.0], [-0.5]], F)
    got = run(
        ctx3,
        "activate2",
        {"data": data, "imm0": imm0, "imm1": 0.75},
        op="copy",
        op0=op0,
        op1=op1,
        reverse0=reverse0,
    )["dst"]
    for p in range(2):
        for i in range(3):
            assert got[p, i] == ref(data[p, i], imm0[p, 0], F(0.75))


def test_activate2_prelu_and_max_reduce(ctx3):
    data = np.array([[-2.0, 3.0, -0.5]], F)
    got = run(
        ctx3,
        "activate2",
        {"data": data, "imm0": 1.0, "imm1": 0.0},
        op="prelu",
        op0="multiply",
        op1="add",
        relu_param=0.1,
        reduce_op="maximum",
        reduce_cmd="reset_reduce",
    )
    np.testing.assert_array_equal(got["dst"], [[F(-2.0) * F(0.1), 3.0, F(-0.5) * F(0.1)]])
    assert got["reduce_res"][0, 0] == 3.0


@pytest.mark.parametrize(
    ("reduce_op", "want"), [("abs_max", -7.0), ("abs_min", 0.5), ("minimum", -7.0)]
)
def test_activate2_signed_magnitude_reductions(ctx3, reduce_op, want):
    data = np.array([[2.0, -7.0, 0.5, 7.0 - 14.0]], F)
    got = run(
        ctx3, "activate2", {"data": data}, op="copy", reduce_op=reduce_op, reduce_cmd="reset_reduce"
    )
    assert got["reduce_res"][0, 0] == want


def test_unknown_function_and_prelu_without_param(ctx):
    with pytest.raises(ValueError, match="activation: unsupported activation function 'cos'"):
        run(ctx, "activation", {"data": np.zeros((1, 1), F)}, op="cos")
    with pytest.raises(ValueError, match="prelu"):
        run(ctx, "activation", {"data": np.zeros((1, 1), F)}, op="prelu")


def test_four_dimensional_tile_with_per_partition_scale(ctx):
    data = np.random.default_rng(9).standard_normal((3, 2, 2, 2, 2)).astype(BF16)
    scale = np.array([[1.0], [2.0], [-0.5]], F)
    got = run(ctx, "activation", {"data": data, "scale": scale}, op="tanh")["dst"]
    assert got.shape == data.shape
    scaled = data.astype(F) * scale.reshape(3, 1, 1, 1, 1)
    for value, out in zip(scaled.reshape(-1), got.reshape(-1)):
        close_to_correctly_rounded(out, math.tanh(float(value)))


def test_accumulator_lanes_start_at_the_tiles_first_partition(ctx):
    # with `_first_partition` (the tile's physical start) a tile at partition 32 uses
    # registers 32..; a later tile at partition 0 does not see them
    a = np.ones((4, 3), np.float32)
    run(
        ctx,
        "activation",
        {"data": a},
        op="copy",
        reduce_op="add",
        reduce_cmd="reset_reduce",
        _first_partition=32,
    )
    low = run(ctx, "activation", {"data": a}, op="copy", reduce_op="add", reduce_cmd="reduce")
    np.testing.assert_array_equal(low["reduce_res"], np.full((4, 1), 3.0, np.float32))
    high = run(
        ctx,
        "activation",
        {"data": a},
        op="copy",
        reduce_op="add",
        reduce_cmd="reduce",
        _first_partition=32,
    )
    np.testing.assert_array_equal(high["reduce_res"], np.full((4, 1), 6.0, np.float32))


def test_vector_accumulator_lanes_start_at_the_tiles_first_partition(ctx):
    a = np.ones((2, 4), np.float32)
    SEMANTICS["tensor_scalar_cumulative"].fn(
        ctx, {"src": a}, {"op0": "add", "op1": "add", "imm0": 0.0, "_first_partition": 64}
    )
    got = SEMANTICS["tensor_scalar_cumulative"].fn(
        ctx, {"src": a}, {"op0": "add", "op1": "add", "imm0": 0.0, "reduce_cmd": "reduce"}
    )["dst"]
    np.testing.assert_array_equal(got, np.tile(np.arange(1, 5, dtype=np.float32), (2, 1)))


def test_inputs_outside_a_functions_valid_range_are_reported(ctx):
    # ISA §3: log is valid on [2^-64, 2^64]; NaN propagates and is not counted
    data = np.array([[-1.0, 0.0, 1.0, 2.0**70, np.nan]], np.float32)
    run(ctx, "activation", {"data": data}, op="log")
    (message,) = ctx.pending
    assert message.startswith("log: 3 of 5 inputs outside the valid range [5.42e-20, 1.84e+19]")
    assert "(e.g. -1 at [0, 0])" in message and "undefined" in message


def test_inputs_inside_the_valid_range_report_nothing(ctx):
    run(ctx, "activation", {"data": np.array([[0.5, 3.0, 1e10]], np.float32)}, op="log")
    run(ctx, "activation", {"data": np.array([[-1e30, 1e30]], np.float32)}, op="exp")
    assert ctx.pending == []


def test_reciprocal_range_is_on_the_magnitude_and_sin_extrapolates(ctx):
    run(ctx, "activation", {"data": np.array([[-2.0, 0.0, 3.0]], np.float32)}, op="reciprocal")
    assert ctx.pending.pop().startswith("reciprocal: 1 of 3 inputs outside the valid range ±[")
    run(ctx, "activation", {"data": np.array([[9.0, 1.0]], np.float32)}, op="sin")
    assert "cubic extrapolation" in ctx.pending.pop()
