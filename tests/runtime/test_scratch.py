"""Temporaries reused from one instruction to the next (`nkirt.scratch`) give the bits a fresh
array would, never overlap within one instruction, and are reused only while the executor's
main call of a semantics function is active."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt import dtypes
from nkirt.isa import activation, alu
from nkirt.isa.registry import SEMANTICS
from nkirt.scratch import Scratch

from tests.runtime.isa.conftest import make_ctx

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"]
INTEGERS = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]


def _every_value(dtype_name: str) -> np.ndarray:
    """Every bit pattern of an 8/16-bit dtype; for 32-bit ones, random patterns plus the
    special values (Inf, NaN, subnormals, extremes)."""
    storage = dtypes.STORAGE[dtype_name]
    if storage.itemsize <= 2:
        bits = np.arange(1 << (8 * storage.itemsize), dtype=np.uint64)
        return bits.astype(f"u{storage.itemsize}").view(storage)
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 1, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF, 0x80000001], "u4")
    return np.concatenate([bits, special]).view(storage)


def test_a_slot_is_reused_by_the_next_instruction_and_slots_do_not_overlap():
    scratch = Scratch()
    scratch.begin()
    first, second = scratch.empty((128, 64), np.float32), scratch.empty((128, 64), np.float32)
    assert not np.shares_memory(first, second)
    scratch.end()
    scratch.begin()
    again = scratch.empty((64, 32), ml_dtypes.bfloat16)  # smaller: a view of the same slot
    assert np.shares_memory(again, first)
    assert again.shape == (64, 32) and again.dtype == ml_dtypes.bfloat16
    bigger = scratch.empty((128, 128), np.float32)  # slot 1 grows: a new buffer
    assert bigger.shape == (128, 128) and not np.shares_memory(bigger, second)
    scratch.end()


def test_only_whole_contiguous_temporaries_may_be_overwritten():
    scratch = Scratch()
    scratch.begin()
    temporary = scratch.empty((128, 64), np.float32)
    assert scratch.owns(temporary) and scratch.owns(temporary.reshape(64, 128))
    assert not scratch.owns(temporary[:, ::2])
    assert not scratch.owns(np.broadcast_to(temporary[:, :1], (128, 64)))
    assert not scratch.owns(np.empty((128, 64), np.float32))


def test_an_inactive_or_oversized_request_allocates_afresh():
    scratch = Scratch()
    one, two = scratch.empty((8,), np.float32), scratch.empty((8,), np.float32)
    assert not np.shares_memory(one, two) and not scratch.buffers
    scratch.begin()
    big = scratch.empty((Scratch.LIMIT // 4 + 1,), np.float32)
    assert not scratch.buffers and big.size == Scratch.LIMIT // 4 + 1
    scratch.end()


@pytest.mark.parametrize("source", FLOATS + INTEGERS)
def test_conversion_to_fp32_into_a_temporary_has_the_bits_of_astype(source):
    values = _every_value(source)
    scratch = Scratch()
    scratch.begin()
    got = dtypes.to_fp32(values, source, scratch)
    want = dtypes.to_fp32(values, source)
    if source == "float32":
        assert got is values  # no conversion, no copy
    else:
        assert np.shares_memory(got, scratch.buffers[0])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("target", FLOATS[1:])
@pytest.mark.parametrize("source", ["float32", "bfloat16", "float16"])
def test_rounding_into_a_temporary_has_the_bits_of_cast(source, target):
    values = _every_value(source)
    scratch = Scratch()
    scratch.begin()
    got = dtypes.cast(values, target, scratch)
    want = dtypes.cast(values, target)
    if source == target:
        assert got is values  # no conversion, no copy
    else:
        assert got.dtype == want.dtype and np.shares_memory(got, scratch.buffers[-1])
    width = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(width), want.view(width))


@pytest.mark.parametrize("op", sorted(alu.ARITHMETIC) + sorted(alu.UNARY))
def test_arithmetic_into_a_temporary_has_the_bits_of_a_fresh_result(op):
    rng = np.random.default_rng(1)
    x = _every_value("bfloat16").astype(np.float32).reshape(256, 256)
    y = rng.permutation(x.reshape(-1)).reshape(256, 256)
    column = y[:, :1]  # broadcast along the free axis, as per-partition operands are
    for second in (y, column):
        scratch = Scratch()
        scratch.begin()
        got = alu.arithmetic(op, x, second, "test", scratch)
        want = alu.arithmetic(op, x, second, "test")
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op", ["add", "maximum", "abs"])
def test_an_intermediate_of_the_scratch_is_overwritten_and_an_operand_is_not(op):
    values = _every_value("bfloat16").reshape(256, 256)
    other = values[::-1].astype(np.float32)
    want = alu.arithmetic(op, values.astype(np.float32), other)
    scratch = Scratch()
    scratch.begin()
    intermediate = dtypes.to_fp32(values, "bfloat16", scratch)
    got = alu.arithmetic(op, intermediate, other, "test", scratch)
    assert got is intermediate and scratch.used == 1
    operand = values.astype(np.float32)  # not the scratch's: a new temporary holds the result
    again = alu.arithmetic(op, operand, other, "test", scratch)
    assert scratch.owns(again) and not scratch.owns(operand)
    np.testing.assert_array_equal(operand, values.astype(np.float32))
    for result in (got, again):
        np.testing.assert_array_equal(result.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op", sorted(activation.FUNCTIONS) + ["prelu"])
def test_activation_functions_into_temporaries_have_the_bits_of_fresh_results(op):
    x = _every_value("bfloat16").astype(np.float32).reshape(256, 256)
    want = activation.evaluate(op, x, "test", relu_param=0.25)
    scratch = Scratch()
    scratch.begin()
    got = activation.evaluate(op, x, "test", relu_param=0.25, scratch=scratch)
    assert scratch.owns(got)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


BF16_TILE = _every_value("bfloat16").reshape(128, 512)
COLUMN = np.linspace(-3, 3, 128, dtype=np.float32).reshape(128, 1)

#: instruction -> (operands, attributes) exercising its paths through the scratch
CASES = {
    "tensor_tensor add": (
        "tensor_tensor",
        {"data1": BF16_TILE, "data2": BF16_TILE[::-1].copy()},
        {"op": "add"},
    ),
    "tensor_tensor greater": (
        "tensor_tensor",
        {"data1": BF16_TILE, "data2": BF16_TILE[::-1].copy()},
        {"op": "greater"},
    ),
    "tensor_scalar column then scalar": (
        "tensor_scalar",
        {"data": BF16_TILE, "operand0": COLUMN},
        {"op0": "multiply", "op1": "subtract", "operand1": 0.5, "reverse1": True},
    ),
    "tensor_scalar abs": ("tensor_scalar", {"data": BF16_TILE}, {"op0": "abs"}),
    "scalar_tensor_tensor": (
        "scalar_tensor_tensor",
        {"data": BF16_TILE, "operand1": BF16_TILE[::-1].copy()},
        {"op0": "add", "operand0": 1.5, "op1": "maximum"},
    ),
    "activation exp": (
        "activation",
        {"data": BF16_TILE, "bias": COLUMN},
        {"op": "exp", "scale": 0.5},
    ),
    "activation tanh": ("activation", {"data": BF16_TILE}, {"op": "tanh"}),
    "activation gelu": ("activation", {"data": BF16_TILE}, {"op": "gelu", "scale": 2.0}),
    "activation_reduce sqrt": ("activation_reduce", {"data": BF16_TILE}, {"op": "sqrt"}),
    "tensor_copy": ("tensor_copy", {"src": BF16_TILE}, {}),
    "dma_copy": ("dma_copy", {"src": BF16_TILE}, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dst", ["bfloat16", "float32", "float8_e4m3"])
def test_element_wise_semantics_with_an_active_scratch_match_a_fresh_run(case, dst):
    name, ops, attrs = CASES[case]
    declared = {k: "bfloat16" for k, v in ops.items() if v.dtype == ml_dtypes.bfloat16}
    attrs = {**attrs, "_dtypes": {**declared, "dst": dst}}
    want = _run(make_ctx(), name, ops, attrs)
    ctx = make_ctx()
    ctx.scratch.begin()
    got = _run(ctx, name, ops, attrs)
    same_dtype_copy = name.endswith("_copy") and dst == "bfloat16"
    assert ctx.scratch.used >= (0 if same_dtype_copy else 1)  # the conversion at least
    assert got.dtype == want.dtype
    width = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(width), want.view(width))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dst", ["float32", "bfloat16"])
def test_matmul_with_an_active_scratch_matches_a_fresh_run(accumulate, dst):
    rng = np.random.default_rng(2)
    stationary = rng.standard_normal((128, 128), np.float32).astype(ml_dtypes.bfloat16)
    moving = rng.standard_normal((128, 512), np.float32).astype(ml_dtypes.bfloat16)
    psum = rng.standard_normal((128, 512), np.float32).astype(dtypes.STORAGE[dst])
    ops = {"stationary": stationary, "moving": moving, "dst": psum}
    declared = {"stationary": "bfloat16", "moving": "bfloat16", "dst": dst}
    attrs = {"accumulate": accumulate, "_dtypes": declared}
    want = _run(make_ctx(exact=False), "nc_matmul", ops, attrs)
    ctx = make_ctx(exact=False)
    ctx.scratch.begin()
    got = _run(ctx, "nc_matmul", ops, attrs)
    assert ctx.scratch.used >= 3  # both operands' casts and the product
    width = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(width), want.view(width))


def _run(ctx, name, ops, attrs) -> np.ndarray:
    return np.array(SEMANTICS[name].fn(ctx, ops, attrs)["dst"])
