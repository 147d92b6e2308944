"""tensor_tensor, tensor_scalar, scalar_tensor_tensor, reciprocal: every ALU op of
ISA §2 against per-element references written from the op table."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32

SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, -3.75, 1e30, -1e-30, np.inf, -np.inf, np.nan, 7.0]


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def ref_binary(op: str, x: float, y: float) -> float:
    """One fp32 ALU operation on fp32 scalars, from the §2 table."""
    x, y = F(x), F(y)
    with np.errstate(all="ignore"):
        table = {
            "add": lambda: x + y,
            "subtract": lambda: x - y,
            "multiply": lambda: x * y,
            "maximum": lambda: x if (x >= y or math.isnan(x)) and not math.isnan(y) else y,
            "minimum": lambda: x if (x <= y or math.isnan(x)) and not math.isnan(y) else y,
            "equal": lambda: F(x == y),
            "not_equal": lambda: F(x != y),
            "greater_equal": lambda: F(x >= y),
            "greater": lambda: F(x > y),
            "less_equal": lambda: F(x <= y),
            "less": lambda: F(x < y),
            "logical_and": lambda: F(bool(x) and bool(y)),
            "logical_or": lambda: F(bool(x) or bool(y)),
            "logical_xor": lambda: F(bool(x) != bool(y)),
            "abs_max": lambda: x if abs(x) > abs(y) else y,
            "abs_min": lambda: x if abs(x) < abs(y) else y,
        }
        value = table[op]()
    if op in ("maximum", "minimum") and (math.isnan(x) or math.isnan(y)):
        return F(np.nan)
    return F(value)


BINARY = [
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "greater_equal",
    "greater",
    "less_equal",
    "less",
    "logical_and",
    "logical_or",
    "logical_xor",
    "abs_max",
    "abs_min",
]


def special_pairs():
    xs, ys = np.meshgrid(np.array(SPECIALS, F), np.array(SPECIALS, F))
    return xs.reshape(12, 3, 4), ys.reshape(12, 3, 4)


def assert_same_floats(got, want):
    got, want = np.asarray(got, F), np.asarray(want, F)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


@pytest.mark.parametrize("op", BINARY)
def test_tensor_tensor_arithmetic_ops_on_specials(ctx, op):
    x, y = special_pairs()
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op=op)["dst"]
    with np.errstate(all="ignore"):
        want = np.vectorize(lambda a, b: ref_binary(op, a, b), otypes=[F])(x, y)
    if op in ("abs_max", "abs_min", "maximum", "minimum"):
        np.testing.assert_array_equal(got, want)  # signed zeros may pick either side
    else:
        assert_same_floats(got, want)


def test_tensor_tensor_mixed_input_dtypes_compute_in_fp32(ctx):
    x = np.array([[1.0, 2.0**-9]], BF16)
    y = np.array([[2.0**-10, 1.0]], F)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="add")["dst"]
    np.testing.assert_array_equal(got, [[F(1) + F(2**-10), F(1) + F(2**-9)]])


def test_tensor_tensor_power_matches_correctly_rounded_pow(ctx):
    x = np.array([[2.0, 9.0, 0.5, -2.0, 10.0, 0.0]], F)
    y = np.array([[10.0, 0.5, 3.0, 3.0, -2.0, 0.0]], F)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="power")["dst"]
    want = [F(math.pow(float(a), float(b))) for a, b in zip(x[0], y[0])]
    np.testing.assert_array_equal(got[0], want)


def test_tensor_tensor_free_shapes_may_differ_with_same_element_count(ctx):
    x = np.arange(24, dtype=F).reshape(2, 3, 4)
    y = np.ones((2, 12), F)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="subtract")["dst"]
    np.testing.assert_array_equal(got, x - 1)


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("bitwise_and", lambda a, b: a & b),
        ("bitwise_or", lambda a, b: a | b),
        ("bitwise_xor", lambda a, b: a ^ b),
        ("left_shift", lambda a, b: (a << b) & 0xFF if b < 64 else 0),
        ("right_shift", lambda a, b: a >> b if b < 64 else 0),
    ],
)
def test_bitvec_ops_work_on_raw_bits(ctx, op, ref):
    x = np.array([[0x80, 0x0F, 0xFF, 0x01], [0x7E, 0x00, 0xAA, 0x55]], np.uint8).view(np.int8)
    y = np.array([[1, 4, 7, 0], [3, 2, 1, 8]], np.int8)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op=op)["dst"]
    assert got.dtype == np.int8
    want = [
        [ref(int(a), int(b)) & 0xFF for a, b in zip(r1, r2)]
        for r1, r2 in zip(x.view(np.uint8), y.view(np.uint8))
    ]
    np.testing.assert_array_equal(got.view(np.uint8), want)


def test_right_shift_is_logical_at_the_operand_width(ctx):
    x = np.array([[-128, -1]], np.int8)
    got = run(ctx, "tensor_scalar", {"data": x}, op0="right_shift", operand0=1)["dst"]
    np.testing.assert_array_equal(got.view(np.uint8), [[0x40, 0x7F]])


def test_bitvec_result_truncates_to_dst_width(ctx):
    x = np.array([[0x12345678, 0x7FFFFFFF]], np.int32)
    got = run(
        ctx,
        "tensor_tensor",
        {"data1": x, "data2": np.array([[4, 1]], np.int32)},
        op="left_shift",
        _dtypes={"data1": "int32", "data2": "int32", "dst": "uint16"},
    )["dst"]
    np.testing.assert_array_equal(got, [[0x6780, 0xFFFE]])


def test_int32_tensor_tensor_defaults_to_exact_gpsimd_arithmetic(ctx):
    x = np.array([[2**31 - 1, -(2**31), 16777217, 65536, 3]], np.int32)
    y = np.array([[1, -1, 1, 65536, -5]], np.int32)
    add = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="add")["dst"]
    mul = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="multiply")["dst"]
    wrap = lambda v: ((v + 2**31) % 2**32) - 2**31  # noqa: E731
    np.testing.assert_array_equal(add, [[wrap(int(a) + int(b)) for a, b in zip(x[0], y[0])]])
    np.testing.assert_array_equal(mul, [[wrap(int(a) * int(b)) for a, b in zip(x[0], y[0])]])
    assert add.dtype == np.int32


def test_int32_tensor_tensor_on_vector_rounds_through_fp32(ctx):
    x = np.array([[16777217, 3]], np.int32)
    y = np.array([[0, 4]], np.int32)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="add", engine="vector")["dst"]
    np.testing.assert_array_equal(got, [[16777216.0, 7.0]])


def test_integer_power_on_gpsimd_wraps(ctx):
    x = np.array([[3, -2, 7]], np.int32)
    y = np.array([[21, 31, 0]], np.int32)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="power", engine="gpsimd")["dst"]
    wrap = lambda v: ((v + 2**31) % 2**32) - 2**31  # noqa: E731
    np.testing.assert_array_equal(got, [[wrap(3**21), wrap((-2) ** 31), 1]])


@pytest.mark.parametrize("reverse0", [False, True])
@pytest.mark.parametrize("reverse1", [False, True])
def test_tensor_scalar_two_stages_with_reverse(ctx, reverse0, reverse1):
    data = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(BF16)
    column = np.array([[0.5], [-2.0], [3.0], [1e-3]], F)
    got = run(
        ctx,
        "tensor_scalar",
        {"data": data, "operand0": 1.25, "operand1": column},
        op0="subtract",
        reverse0=reverse0,
        op1="multiply",
        reverse1=reverse1,
    )["dst"]
    x = data.astype(F)
    t = F(1.25) - x if reverse0 else x - F(1.25)
    want = t * column.reshape(4, 1, 1)
    np.testing.assert_array_equal(got, want)


def test_tensor_scalar_per_partition_subtract_reversed(ctx):
    data = np.array([[1.0, 2.0], [3.0, 4.0]], F)
    got = run(
        ctx,
        "tensor_scalar",
        {"data": data, "operand0": np.array([[10.0], [20.0]], F)},
        op0="subtract",
        reverse0=True,
    )["dst"]
    np.testing.assert_array_equal(got, [[9.0, 8.0], [17.0, 16.0]])


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("abs", lambda x: abs(x)),
        ("square", lambda x: F(x) * F(x)),
        ("relu", lambda x: max(x, 0.0)),
        ("rsqrt", lambda x: 1 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan)),
        ("reciprocal", lambda x: F(1) / F(x) if x != 0 else math.copysign(math.inf, x)),
        ("logical_not", lambda x: float(x == 0)),
    ],
)
def test_tensor_scalar_unary_op0_ignores_operand(ctx, op, ref):
    data = np.array([[4.0, 0.25, 2.0, -3.0, 0.0, 1e-3]], F)
    for operand in (None, 0):
        got = run(ctx, "tensor_scalar", {"data": data}, op0=op, operand0=operand)["dst"]
        want = np.array([[ref(float(v)) for v in data[0]]], dtype=np.float64).astype(F)
        assert_same_floats(got, want)


def test_tensor_scalar_bitvec_two_stages(ctx):
    data = np.array([[0x0F0F, 0x1234]], np.uint16)
    got = run(
        ctx,
        "tensor_scalar",
        {"data": data},
        op0="bitwise_and",
        operand0=0xFF,
        op1="left_shift",
        operand1=4,
    )["dst"]
    np.testing.assert_array_equal(got, [[0x00F0, 0x0340]])


def test_tensor_scalar_invert(ctx):
    data = np.array([[0, 5, -1]], np.int16)
    got = run(ctx, "tensor_scalar", {"data": data}, op0="invert", operand0=None)["dst"]
    np.testing.assert_array_equal(got, [[-1, -6, 0]])


def test_tensor_scalar_rejects_mixed_op_classes(ctx):
    with pytest.raises(ValueError, match="tensor_scalar: op0"):
        run(
            ctx,
            "tensor_scalar",
            {"data": np.zeros((1, 2), np.int32)},
            op0="bitwise_and",
            operand0=1,
            op1="add",
            operand1=1,
        )


def test_unknown_op_is_a_clear_error(ctx):
    with pytest.raises(ValueError, match="tensor_tensor: unsupported arithmetic op 'fmod'"):
        run(
            ctx,
            "tensor_tensor",
            {"data1": np.zeros((1, 1), F), "data2": np.zeros((1, 1), F)},
            op="fmod",
        )


@pytest.mark.parametrize("reverse0", [False, True])
@pytest.mark.parametrize("reverse1", [False, True])
def test_scalar_tensor_tensor(ctx, reverse0, reverse1):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((3, 4, 2)).astype(F)
    operand1 = rng.standard_normal((3, 8)).astype(BF16)
    column = np.array([[2.0], [0.5], [-1.0]], F)
    got = run(
        ctx,
        "scalar_tensor_tensor",
        {"data": data, "operand0": column, "operand1": operand1},
        op0="subtract",
        op1="multiply",
        reverse0=reverse0,
        reverse1=reverse1,
    )["dst"]
    c = column.reshape(3, 1, 1)
    t = c - data if reverse0 else data - c
    want = operand1.astype(F).reshape(3, 4, 2) * t
    np.testing.assert_array_equal(got, want)


def test_reciprocal_is_correctly_rounded_fp32(ctx):
    data = np.array([[3.0, -7.0, 0.0, -0.0, np.inf, 1e-40]], F)
    got = run(ctx, "reciprocal", {"data": data})["dst"]
    with np.errstate(divide="ignore", over="ignore"):
        want = F(1) / data
    assert_same_floats(got, want)


def test_four_dimensional_free_shapes_with_partial_partitions(ctx):
    rng = np.random.default_rng(8)
    shape = (5, 2, 3, 2, 4)
    x = rng.standard_normal(shape).astype(F)
    y = rng.standard_normal(shape).astype(np.float16)
    got = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="multiply")["dst"]
    np.testing.assert_array_equal(got, x * y.astype(F))
    column = rng.standard_normal((5, 1)).astype(F)
    scaled = run(ctx, "tensor_scalar", {"data": x, "operand0": column}, op0="add")["dst"]
    np.testing.assert_array_equal(scaled, x + column.reshape(5, 1, 1, 1, 1))


def test_negative_zero_results(ctx):
    x = np.array([[-0.0, 0.0, -0.0]], F)
    y = np.array([[-0.0, -0.0, 0.0]], F)
    add = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="add")["dst"]
    mul = run(ctx, "tensor_tensor", {"data1": x, "data2": y}, op="multiply")["dst"]
    np.testing.assert_array_equal(np.signbit(add), [[True, False, False]])
    np.testing.assert_array_equal(np.signbit(mul), [[False, True, True]])
