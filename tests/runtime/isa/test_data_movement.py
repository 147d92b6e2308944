"""dma_copy, dma_transpose, dma_compute, tensor_copy, memset, tensor_copy_predicated,
nc_stream_shuffle."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def nan_payloads(shape):
    bits = np.random.default_rng(3).integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    bits[..., 0] = 0x7FC01234
    bits[..., 1] = 0xFF800001
    bits[..., 2] = 0x80000000
    return bits.view(np.float32)


@pytest.mark.parametrize("op", ["dma_copy", "tensor_copy"])
def test_same_dtype_copy_is_bit_exact(ctx, op):
    src = nan_payloads((4, 3, 8))
    got = run(ctx, op, {"src": src}, _dtypes={"src": "float32", "dst": "float32"})["dst"]
    np.testing.assert_array_equal(got.view(np.uint32), src.view(np.uint32))


@pytest.mark.parametrize("op", ["dma_copy", "tensor_copy"])
def test_converting_copy_goes_through_fp32(ctx, op):
    src = np.array([[1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 5 * 2**-9, -0.0, 100.5]], np.float32)
    got = run(ctx, op, {"src": src}, _dtypes={"src": "float32", "dst": "bfloat16"})["dst"]
    assert got.dtype == BF16
    want = [[1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -0.0, 100.5]]
    np.testing.assert_array_equal(got.astype(np.float32), want)
    assert got.view(np.uint16)[0, 4] == 0x8000


def test_dma_copy_int32_to_int8_saturates_and_float_to_int_rounds_even(ctx):
    src = np.array([[2.5, -2.5, 3.5, 1e9, -1e9, np.nan]], dtype=np.float32)
    got = run(ctx, "dma_copy", {"src": src}, _dtypes={"src": "float32", "dst": "int8"})["dst"]
    np.testing.assert_array_equal(got, [[2, -2, 4, 127, -128, 0]])


def test_dma_copy_of_large_int32_to_uint32_loses_bits_through_fp32(ctx):
    src = np.array([[2**24 + 1, 123]], dtype=np.int32)
    got = run(ctx, "dma_copy", {"src": src}, _dtypes={"src": "int32", "dst": "uint32"})["dst"]
    np.testing.assert_array_equal(got, [[2**24, 123]])


def test_dma_copy_rejects_converting_packed_types(ctx):
    with pytest.raises(ValueError, match="dma_copy"):
        run(
            ctx,
            "dma_copy",
            {"src": np.zeros((1, 4), np.uint32)},
            _dtypes={"src": "float8_e5m2_x4", "dst": "float32"},
        )


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((16, 128), (1, 0)), ((4, 8, 16), (2, 1, 0)), ((2, 3, 4, 5), (3, 1, 2, 0))],
)
def test_dma_transpose_permutations(ctx, shape, axes):
    src = np.arange(np.prod(shape), dtype=np.float32).reshape(shape).astype(BF16)
    got = run(ctx, "dma_transpose", {"src": src})["dst"]
    want = np.empty([shape[a] for a in axes], dtype=BF16)
    for index in np.ndindex(*shape):
        want[tuple(index[a] for a in axes)] = src[index]
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    explicit = run(ctx, "dma_transpose", {"src": src}, axes=axes)["dst"]
    np.testing.assert_array_equal(explicit.view(np.uint16), want.view(np.uint16))


def test_dma_transpose_rejects_other_axes(ctx):
    with pytest.raises(ValueError, match="dma_transpose: unsupported axes"):
        run(ctx, "dma_transpose", {"src": np.zeros((2, 3, 4), BF16)}, axes=(0, 2, 1))


def test_dma_compute_sums_scaled_sources_in_fp32(ctx):
    a = np.array([[1.0, 2.0, 1e8]], dtype=np.float32)
    b = np.array([[0.5, -2.0, 1.0]], dtype=BF16)
    c = np.array([[3.0, 0.0, -1e8]], dtype=np.float32)
    got = run(ctx, "dma_compute", {"srcs": [a, b, c]}, reduce_op="add")["dst"]
    want = (np.float32(1e8) + np.float32(1.0)) + np.float32(-1e8)
    np.testing.assert_array_equal(got, [[4.5, 0.0, want]])


def test_dma_compute_applies_scales(ctx):
    a = np.ones((2, 2), np.float32)
    got = run(ctx, "dma_compute", {"srcs": [a, a]}, reduce_op="add", scales=[1.0, 1.0])["dst"]
    np.testing.assert_array_equal(got, 2 * a)
    with pytest.raises(ValueError, match="dma_compute: unsupported reduce_op"):
        run(ctx, "dma_compute", {"srcs": [a]}, reduce_op="maximum")


@pytest.mark.parametrize(
    ("dtype_name", "value", "want_bits"),
    [
        ("bfloat16", 1.5, 0x3FC0),
        ("float32", -0.0, 0x80000000),
        ("int8", -3, 0xFD),
        ("float8_e4m3fn", 1000.0, 0x7F),
        ("uint16", 70000, 0xFFFF),
    ],
)
def test_memset_fills_with_the_cast_value(ctx, dtype_name, value, want_bits):
    from nkirt.dtypes import storage_dtype

    dst = np.zeros((3, 2, 5), dtype=storage_dtype(dtype_name))
    got = run(ctx, "memset", {"dst": dst}, value=value, _dtypes={"dst": dtype_name})["dst"]
    assert got.shape == dst.shape and got.dtype == dst.dtype
    unsigned = np.dtype(f"uint{dst.itemsize * 8}")
    assert (got.view(unsigned) == want_bits).all()


def test_memset_packed_only_zero(ctx):
    dst = np.ones((2, 4), np.uint32)
    got = run(ctx, "memset", {"dst": dst}, value=0, _dtypes={"dst": "float8_e5m2_x4"})["dst"]
    assert (got == 0).all()
    with pytest.raises(ValueError, match="memset"):
        run(ctx, "memset", {"dst": dst}, value=1.0, _dtypes={"dst": "float8_e5m2_x4"})


@pytest.mark.parametrize("reverse", [False, True])
def test_tensor_copy_predicated(ctx, reverse):
    dst = np.full((2, 2, 3), -1.0, np.float32)
    src = nan_payloads((2, 2, 3))
    predicate = np.array([[1, 0, 7, 0, 0, 255], [0, 0, 0, 1, 1, 1]], np.uint8)
    got = run(
        ctx,
        "tensor_copy_predicated",
        {"dst": dst, "src": src, "predicate": predicate},
        reverse_pred=reverse,
    )["dst"]
    take = (predicate.reshape(dst.shape) != 0) ^ reverse
    want = np.where(take, src.view(np.uint32), dst.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32), want)


def test_tensor_copy_predicated_scalar_source(ctx):
    dst = np.zeros((2, 3), BF16)
    predicate = np.array([[1, 0, 1], [0, 1, 0]], np.uint16)
    got = run(ctx, "tensor_copy_predicated", {"dst": dst, "src": 2.5, "predicate": predicate})
    np.testing.assert_array_equal(got["dst"].astype(np.float32), [[2.5, 0, 2.5], [0, 2.5, 0]])


def test_nc_stream_shuffle_within_quadrants(ctx):
    src = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    dst = np.full((64, 3), -7.0, np.float32)
    mask = [(i + 1) % 32 for i in range(32)]
    mask[5] = 255
    mask[6] = 0
    got = run(ctx, "nc_stream_shuffle", {"src": src, "dst": dst}, shuffle_mask=mask)["dst"]
    for p in range(64):
        quadrant, lane = divmod(p, 32)
        want = dst[p] if mask[lane] == 255 else src[quadrant * 32 + mask[lane]]
        np.testing.assert_array_equal(got[p], want)


def test_nc_stream_shuffle_lane_without_source_is_an_error(ctx):
    # a 16-partition src has no lane 20: a clear error, not an IndexError
    src = np.zeros((16, 2), np.float32)
    with pytest.raises(ValueError, match="nc_stream_shuffle: shuffle_mask"):
        run(ctx, "nc_stream_shuffle", {"src": src, "dst": src.copy()}, shuffle_mask=[20] * 32)


def test_dma_compute_takes_indexed_source_operands(ctx):
    ops = {f"srcs{i}": np.full((2, 3), float(i + 1), F) for i in range(11)}
    got = run(ctx, "dma_compute", ops, reduce_op="add")["dst"]
    np.testing.assert_array_equal(got, np.full((2, 3), 66.0, F))


def test_declared_dst_dtype_rounds_tfloat32_results(ctx):
    x = np.array([[1 + 2**-20, 3.0]], F)
    got = run(
        ctx,
        "tensor_scalar",
        {"data": x, "operand0": 1.0},
        op0="multiply",
        _dtypes={"data": "float32", "dst": "tfloat32"},
    )["dst"]
    np.testing.assert_array_equal(got, [[1.0, 3.0]])
