"""`nl` elementwise APIs compiled and run on the simulator against numpy references written
from the API docs (ISA §7): binary arithmetic, comparisons, bitwise and logical ops,
unary math and activations."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import nkic

from .kernels import binary, tiled_exp, unary, with_scalar

BF16 = ml_dtypes.bfloat16
SHAPES = [(128, 64), (37, 24)]  # a full tile and a partial one


def rand(shape, seed, low=-4.0, high=4.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def run(kernel, *arrays, **consts):
    return nkic.compile(kernel, *arrays, **consts)(*arrays)


def close(got, want, dtype):
    tol = 1e-5 if np.dtype(dtype) == np.float32 else 2e-2
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=tol, atol=tol
    )


# ---------------------------------------------------------------------------------------------
# binary arithmetic

ARITHMETIC = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("name", list(ARITHMETIC))
@pytest.mark.parametrize(("shape", "dtype"), [((128, 64), np.float32), ((37, 24), BF16)])
def test_binary_arithmetic_of_two_tiles(name, shape, dtype):
    a, b = rand(shape, 1).astype(dtype), rand(shape, 2, 0.5, 4.0).astype(dtype)
    got = run(binary, a, b, name=name)
    assert got.dtype == np.dtype(dtype)
    close(got, ARITHMETIC[name](a.astype(np.float32), b.astype(np.float32)), dtype)


def test_power_of_two_tiles_runs_on_gpsimd():
    a, b = rand((64, 32), 3, 0.5, 3.0), rand((64, 32), 4, -2.0, 2.0)
    kernel = nkic.compile(binary, a, b, name="power")
    close(kernel(a, b), np.power(a, b), np.float32)
    assert "tensor_tensor[gpsimd]" in kernel.ir


@pytest.mark.parametrize(
    ("name", "scalar", "first", "reference"),
    [
        ("add", 1.5, False, lambda x: x + 1.5),
        ("subtract", 1.5, True, lambda x: 1.5 - x),
        ("multiply", -3.0, False, lambda x: x * -3.0),
        ("divide", 4.0, False, lambda x: x / 4.0),
        ("divide", 2.0, True, lambda x: 2.0 / x),
        ("maximum", 0.25, False, lambda x: np.maximum(x, 0.25)),
        ("minimum", 0.25, True, lambda x: np.minimum(x, 0.25)),
        ("power", 2.0, False, lambda x: x**2.0),
        ("power", 2.0, True, lambda x: 2.0**x),
    ],
)
def test_binary_with_a_scalar(name, scalar, first, reference):
    a = rand((37, 24), 5, 0.5, 3.0)
    got = run(with_scalar, a, name=name, scalar=scalar, scalar_first=first)
    close(got, reference(a), np.float32)


def test_mixed_dtypes_promote_and_dtype_overrides():
    a, b = rand((32, 16), 6).astype(BF16), rand((32, 16), 7)
    assert run(binary, a, b, name="add").dtype == np.float32  # bf16 + fp32 -> fp32
    got = run(binary, a, b, name="multiply", dtype="bfloat16")
    assert got.dtype == BF16
    close(got, a.astype(np.float32) * b, BF16)


def test_integer_tiles_add_exactly():
    a = np.random.default_rng(8).integers(-(2**30), 2**30, (16, 8)).astype(np.int32)
    b = np.random.default_rng(9).integers(-(2**30), 2**30, (16, 8)).astype(np.int32)
    np.testing.assert_array_equal(run(binary, a, b, name="add"), a + b)


# ---------------------------------------------------------------------------------------------
# comparisons, bitwise, logical

COMPARISONS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_comparisons_give_one_or_zero_in_the_input_dtype(name, dtype):
    a = np.round(rand((40, 12), 10)).astype(dtype)
    b = np.round(rand((40, 12), 11)).astype(dtype)
    got = run(binary, a, b, name=name)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, COMPARISONS[name](a, b).astype(dtype))


def test_comparison_with_uint8_result_and_a_scalar():
    a = np.round(rand((40, 12), 12))
    got = run(binary, a, a.copy(), name="less_equal", dtype="uint8")
    assert got.dtype == np.uint8 and (got == 1).all()
    np.testing.assert_array_equal(
        run(with_scalar, a, name="greater", scalar=0.0), (a > 0).astype(np.float32)
    )


BITWISE = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}


@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise_ops_on_integer_tiles(name):
    rng = np.random.default_rng(13)
    a = rng.integers(0, 2**31, (24, 16)).astype(np.int32)
    b = rng.integers(0, 31, (24, 16)).astype(np.int32)
    want = BITWISE[name](a.astype(np.uint32), b.astype(np.uint32)).astype(np.int32)
    np.testing.assert_array_equal(run(binary, a, b, name=name), want)


def test_bitwise_with_scalars_and_invert():
    a = np.random.default_rng(14).integers(0, 2**16, (24, 16)).astype(np.uint16)
    np.testing.assert_array_equal(
        run(with_scalar, a, name="bitwise_and", scalar=0xFF), a & np.uint16(0xFF)
    )
    np.testing.assert_array_equal(
        run(with_scalar, a, name="right_shift", scalar=3), a >> np.uint16(3)
    )
    np.testing.assert_array_equal(run(unary, a, name="invert"), ~a)


LOGICAL = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical_ops_on_zero_one_tiles(name):
    rng = np.random.default_rng(15)
    a = rng.integers(0, 2, (64, 8)).astype(np.float32)
    b = rng.integers(0, 2, (64, 8)).astype(np.float32)
    np.testing.assert_array_equal(run(binary, a, b, name=name), LOGICAL[name](a, b).astype(a.dtype))


def test_logical_not():
    a = np.random.default_rng(16).integers(0, 2, (64, 8)).astype(np.float32)
    np.testing.assert_array_equal(run(unary, a, name="logical_not"), 1.0 - a)


# ---------------------------------------------------------------------------------------------
# unary math and activations


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _phi(x):  # standard normal CDF
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _softplus(x):
    return np.log1p(np.exp(x))


UNARY = {
    # name: (reference on float64, input range)
    "abs": (np.abs, (-4, 4)),
    "square": (np.square, (-4, 4)),
    "exp": (np.exp, (-4, 4)),
    "log": (np.log, (0.01, 100)),
    "sqrt": (np.sqrt, (0.01, 100)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100)),
    "reciprocal": (lambda x: 1 / x, (0.1, 10)),
    "arctan": (np.arctan, (-1.5, 1.5)),
    "sign": (np.sign, (-4, 4)),
    "negative": (np.negative, (-4, 4)),
    "tanh": (np.tanh, (-4, 4)),
    "sigmoid": (_sigmoid, (-8, 8)),
    "relu": (lambda x: np.maximum(x, 0), (-4, 4)),
    "gelu": (lambda x: x * _phi(x), (-4, 4)),
    "gelu_dx": (lambda x: _phi(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi), (-4, 4)),
    "gelu_apprx_tanh": (
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        (-4, 4),
    ),
    "gelu_apprx_sigmoid": (lambda x: x * _sigmoid(1.702 * x), (-4, 4)),
    "gelu_apprx_sigmoid_dx": (
        lambda x: _sigmoid(1.702 * x) * (1 + 1.702 * x * (1 - _sigmoid(1.702 * x))),
        (-4, 4),
    ),
    "silu": (lambda x: x * _sigmoid(x), (-4, 4)),
    "silu_dx": (lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))), (-4, 4)),
    "softplus": (_softplus, (-4, 4)),
    "mish": (lambda x: x * np.tanh(_softplus(x)), (-4, 4)),
    "erf": (np.vectorize(math.erf), (-3, 3)),
    "erf_dx": (lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), (-3, 3)),
    # compositions: range-reduced sine, floor/ceil/trunc through the int32 conversion
    "sin": (np.sin, (-50, 50)),
    "cos": (np.cos, (-50, 50)),
    "tan": (np.tan, (-1.4, 1.4)),
    "floor": (np.floor, (-100, 100)),
    "ceil": (np.ceil, (-100, 100)),
    "trunc": (np.trunc, (-100, 100)),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize(("shape", "dtype"), [((128, 64), np.float32), ((37, 24), BF16)])
def test_unary(name, shape, dtype):
    reference, (low, high) = UNARY[name]
    x = rand(shape, 17, low, high).astype(dtype)
    got = run(unary, x, name=name)
    assert got.dtype == np.dtype(dtype)
    want = reference(x.astype(np.float64))
    if np.dtype(dtype) == np.float32:
        tol = 1e-4 if name in ("sin", "cos", "tan") else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        close(got, want, dtype)


def test_sine_is_range_reduced_far_outside_pi():
    x = np.array([[9.0, -9.0, 100.0, 1000.5, -2.5e4, 0.0, np.pi]], np.float32)
    np.testing.assert_allclose(run(unary, x, name="sin"), np.sin(x.astype(np.float64)), atol=2e-3)


def test_floor_and_ceil_of_integral_and_half_values():
    x = np.array([[-2.5, -2.0, -0.5, 0.0, 0.5, 1.5, 2.0, 2.5, 3.999, -3.999]], np.float32)
    np.testing.assert_array_equal(run(unary, x, name="floor"), np.floor(x))
    np.testing.assert_array_equal(run(unary, x, name="ceil"), np.ceil(x))
    np.testing.assert_array_equal(run(unary, x, name="trunc"), np.trunc(x))


def test_unary_dtype_argument():
    x = rand((16, 8), 18)
    got = run(unary, x, name="exp", dtype="bfloat16")
    assert got.dtype == BF16
    close(got, np.exp(x), BF16)


def test_nl_calls_inside_a_hardware_loop_stay_one_loop():
    x = rand((256, 32), 19)
    kernel = nkic.compile(tiled_exp, x)
    close(kernel(x), np.exp(x), np.float32)
    assert kernel.ir.count("activation[") == 1 and "for $i0 = 0 to 4" in kernel.ir


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("float32", "bfloat16", "float32"),
        ("float16", "bfloat16", "float32"),
        ("float8_e4m3", "float8_e5m2", "bfloat16"),
        ("int32", "bfloat16", "bfloat16"),
        ("int8", "uint8", "int16"),
        ("int8", "uint16", "int32"),
        ("int16", "uint8", "int16"),
        ("int32", "uint32", "float32"),
        ("bool", "uint16", "uint16"),
        ("uint8", "uint32", "uint32"),
    ],
)
def test_dtype_promotion_of_two_tiles(a, b, want):
    from nkic.frontend.nl_math import promote

    assert promote(a, b) == promote(b, a) == want
