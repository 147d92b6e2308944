"""iota, affine_select, sequence_bounds, local_gather, nc_n_gather, nonzero_with_count."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def ref_affine(partitions, pattern, offset, multiplier):
    sizes = [n for _, n in pattern]
    out = np.zeros((partitions, int(np.prod(sizes))), np.int64)
    for c in range(partitions):
        for flat, index in enumerate(np.ndindex(*sizes)):
            out[c, flat] = offset + c * multiplier + sum(i * s for i, (s, _) in zip(index, pattern))
    return out


@pytest.mark.parametrize(
    ("pattern", "shape"),
    [
        ([[1, 8]], (4, 8)),
        ([[-3, 2], [5, 4]], (3, 2, 4)),
        ([[1, 2], [2, 2], [4, 2], [8, 2]], (2, 16)),
    ],
)
def test_iota_patterns(ctx, pattern, shape):
    dst = np.zeros(shape, np.int32)
    got = run(ctx, "iota", {"dst": dst}, pattern=pattern, offset=7, channel_multiplier=-2)["dst"]
    np.testing.assert_array_equal(got.reshape(shape[0], -1), ref_affine(shape[0], pattern, 7, -2))
    assert got.shape == shape


def test_iota_casts_int32_to_dst_dtype(ctx):
    dst = np.zeros((2, 4), BF16)
    got = run(
        ctx,
        "iota",
        {"dst": dst},
        pattern=[[257, 4]],
        channel_multiplier=1,
        _dtypes={"dst": "bfloat16"},
    )["dst"]
    want = ref_affine(2, [[257, 4]], 0, 1).astype(F).astype(BF16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    narrow = run(ctx, "iota", {"dst": np.zeros((1, 3), np.int8)}, pattern=[[100, 3]])["dst"]
    np.testing.assert_array_equal(narrow, [[0, 100, 127]])


def test_iota_rejects_a_pattern_of_the_wrong_size(ctx):
    with pytest.raises(ValueError, match="iota"):
        run(ctx, "iota", {"dst": np.zeros((2, 5), np.int32)}, pattern=[[1, 4]])


@pytest.mark.parametrize(
    "cmp_op", ["equal", "not_equal", "greater_equal", "greater", "less_equal", "less"]
)
def test_affine_select_causal_mask(ctx, cmp_op):
    on_true = np.random.default_rng(0).standard_normal((4, 6)).astype(BF16)
    pattern = [[-1, 6]]
    got = run(
        ctx,
        "affine_select",
        {"on_true_tile": on_true},
        pattern=pattern,
        channel_multiplier=1,
        on_false_value=-1e30,
        cmp_op=cmp_op,
    )["dst"]
    values = ref_affine(4, pattern, 0, 1)
    keep = {
        "equal": values == 0,
        "not_equal": values != 0,
        "greater_equal": values >= 0,
        "greater": values > 0,
        "less_equal": values <= 0,
        "less": values < 0,
    }[cmp_op]
    want = np.where(keep, on_true, F(-1e30).astype(BF16))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_affine_select_to_another_dtype(ctx):
    on_true = np.array([[1.5, 2.5, 3.5]], BF16)
    got = run(
        ctx,
        "affine_select",
        {"on_true_tile": on_true},
        pattern=[[1, 3]],
        channel_multiplier=0,
        offset=-1,
        on_false_value=-9.0,
        cmp_op="greater_equal",
        _dtypes={"on_true_tile": "bfloat16", "dst": "float32"},
    )["dst"]
    np.testing.assert_array_equal(got, [[-9.0, 2.5, 3.5]])


def ref_sequence_bounds(ids):
    n = len(ids)
    starts, ends = [0] * n, [0] * n
    for i in range(n):
        starts[i] = i if i == 0 or ids[i] != ids[i - 1] else starts[i - 1]
    for i in reversed(range(n)):
        ends[i] = i + 1 if i == n - 1 or ids[i] != ids[i + 1] else ends[i + 1]
    for i in range(n):
        if ids[i] == 0:
            starts[i], ends[i] = n, -1
    return [starts, ends]


@pytest.mark.parametrize("dtype", [np.int32, F])
def test_sequence_bounds(ctx, dtype):
    ids = np.array([[1, 1, 2, 2, 2, 0, 0, 3, 1, 1]], dtype)
    got = run(ctx, "sequence_bounds", {"segment_ids": ids})["dst"]
    assert got.shape == (1, 2, 10) and got.dtype == dtype
    np.testing.assert_array_equal(got[0], ref_sequence_bounds(list(ids[0])))


def test_local_gather_matches_the_documented_numpy(ctx):
    rng = np.random.default_rng(1)
    src = rng.standard_normal((32, 64, 4)).astype(F)
    per_index = 4
    index_per_core = rng.integers(0, 64, (16, 2)).astype(np.uint16)
    index = np.tile(index_per_core, (2, 1)) * per_index
    valid = 24
    got = run(
        ctx,
        "local_gather",
        {"src_buffer": src, "index": index},
        num_elem_per_idx=per_index,
        num_valid_indices=valid,
    )["dst"]
    want = np.empty((32, valid, per_index), F)
    for core in range(2):
        part = slice(core * 16, core * 16 + 16)
        flat = (index[part] // per_index).flatten(order="F")[:valid]
        want[part] = np.take(src[part], flat, axis=1)
    np.testing.assert_array_equal(got, want.reshape(32, -1))


def test_local_gather_defaults_to_all_indices(ctx):
    src = np.arange(16 * 5, dtype=np.int16).reshape(16, 5)
    index = np.arange(16, dtype=np.uint16).reshape(16, 1) % 5
    got = run(ctx, "local_gather", {"src_buffer": src, "index": index})["dst"]
    assert got.shape == (16, 16)
    np.testing.assert_array_equal(got, src[:, index[:, 0]])


def test_nc_n_gather_per_partition(ctx):
    data = np.arange(3 * 2 * 4, dtype=F).reshape(3, 2, 4)
    indices = np.array([[7, 0, 3], [1, 1, 6], [0, 2, 4]], np.uint32).reshape(3, 3)
    got = run(ctx, "nc_n_gather", {"data": data, "indices": indices})["dst"]
    flat = data.reshape(3, 8)
    np.testing.assert_array_equal(got, [[flat[p, i] for i in indices[p]] for p in range(3)])


def test_nonzero_with_count_writes_every_16th_partition(ctx):
    src = np.zeros((32, 6), F)
    src[0] = [0, 1.5, 0, -2, np.nan, -0.0]
    src[16] = [3, 3, 3, 3, 3, 3]
    src[1] = [1, 1, 1, 1, 1, 1]
    dst = np.full((32, 7), 99, np.int32)
    got = run(ctx, "nonzero_with_count", {"src": src, "dst": dst}, index_offset=10, padding_val=-5)[
        "dst"
    ]
    np.testing.assert_array_equal(got[0], [11, 13, 14, -5, -5, -5, 3])
    np.testing.assert_array_equal(got[16], [10, 11, 12, 13, 14, 15, 6])
    np.testing.assert_array_equal(got[1], [99] * 7)
