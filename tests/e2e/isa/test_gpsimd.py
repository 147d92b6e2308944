"""iota, affine_select, range_select, select_reduce, sequence_bounds, local_gather,
nc_n_gather, nc_stream_shuffle, nonzero_with_count, max8, nc_find_index8, nc_match_replace8."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import BF16, TARGETS, assert_bits, f32, isa, rnd

FP32_MIN = float(np.finfo(np.float32).min)


def affine(P, pattern, offset, cm):
    """offset + c*channel_multiplier + sum(i_k * step_k), int32 wraparound (ISA §5.4)."""
    pattern = [list(p) for p in pattern]
    while len(pattern) < 4:
        pattern.insert(0, [0, 1])
    steps = [s for s, _ in pattern]
    sizes = [n for _, n in pattern]
    idx = np.indices([P] + sizes).astype(np.int64)
    v = offset + idx[0] * cm
    for k in range(4):
        v = v + idx[k + 1] * steps[k]
    v = (v + 2**31) % 2**32 - 2**31
    return v.reshape(P, -1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("pattern", "offset", "cm", "dtype"),
    [
        ([[1, 12]], 0, 12, "int32"),
        ([[-1, 3], [4, 4]], 5, -2, "float32"),
        ([[1, 2], [2, 3], [6, 2]], 2**31 - 3, 1, "int32"),
        ([[300, 4], [1, 2], [7, 1], [1, 2]], -100, 64, "int8"),
        ([[1, 8]], 0, 1, "bfloat16"),
    ],
)
def test_iota(target, pattern, offset, cm, dtype):
    P = 6
    n = int(np.prod([s for _, s in pattern]))
    got = isa(
        "iota",
        [],
        {},
        {"dst": {"shape": (P, n), "dtype": dtype, "p0": 32}},
        target=target,
        pattern=pattern,
        offset=offset,
        channel_multiplier=cm,
    )
    v = affine(P, pattern, offset, cm)
    if dtype == "int8":
        want = np.clip(v, -128, 127).astype(np.int8)
    elif dtype == "bfloat16":
        want = v.astype(np.float32).astype(BF16)
    else:
        want = v.astype(dtype)
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "cmp", ["equal", "greater_equal", "less", "not_equal", "greater", "less_equal"]
)
def test_affine_select_causal_mask(target, cmp):
    P, F = 8, 8
    x = rnd((P, F), seed=1)
    x[0, 0] = np.nan
    got = isa(
        "affine_select",
        [x],
        {"on_true_tile": {"t": 0}},
        {"dst": {"shape": (P, F), "dtype": "float32"}},
        target=target,
        pattern=[[-1, F]],
        channel_multiplier=1,
        on_false_value=-9984.0,
        cmp_op=f"nl.{cmp}",
        offset=0,
    )
    v = affine(P, [[-1, F]], 0, 1)
    fn = {
        "equal": np.equal,
        "greater_equal": np.greater_equal,
        "less": np.less,
        "not_equal": np.not_equal,
        "greater": np.greater,
        "less_equal": np.less_equal,
    }[cmp]
    assert_bits(got, np.where(fn(v, 0), x, f32(-9984.0)))


@pytest.mark.parametrize("target", TARGETS)
def test_affine_select_bf16_tile_cast_false(target):
    x = rnd((4, 6), BF16, seed=2)
    got = isa(
        "affine_select",
        [x],
        {"on_true_tile": {"t": 0}},
        {"dst": {"shape": (4, 6), "dtype": "bfloat16"}},
        target=target,
        pattern=[[1, 6]],
        channel_multiplier=-2,
        on_false_value=1.00390625,
        cmp_op="nl.greater",
        offset=-1,
    )
    v = affine(4, [[1, 6]], -1, -2)
    assert_bits(got, np.where(v > 0, x, f32(1.00390625).astype(BF16)))


# ---------------------------------------------------------------------------- range_select


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize(
    ("c0", "c1"), [("greater_equal", "less"), ("greater", "less_equal"), ("equal", "less")]
)
def test_range_select(target, c0, c1):
    x = rnd((5, 10), seed=3)
    b0 = f32([[0], [2], [3], [-1], [9]])
    b1 = f32([[4], [2], [10], [5], [12]])
    got, res = isa(
        "range_select",
        [x, b0, b1],
        {"on_true_tile": {"t": 0}, "bound0": {"t": 1}, "bound1": {"t": 2}},
        {
            "dst": {"shape": (5, 10), "dtype": "float32"},
            "reduce_res": {"shape": (5, 1), "dtype": "float32"},
        },
        target=target,
        comp_op0=f"nl.{c0}",
        comp_op1=f"nl.{c1}",
        range_start=3,
    )
    idx = f32(3 + np.arange(10))[None, :]
    fn = {
        "greater_equal": np.greater_equal,
        "less": np.less,
        "greater": np.greater,
        "less_equal": np.less_equal,
        "equal": np.equal,
    }
    keep = fn[c0](idx, b0) & fn[c1](idx, b1)
    want = np.where(keep, x, f32(FP32_MIN))
    assert_bits(got, want)
    assert_bits(res, want.max(axis=1, keepdims=True))


# --------------------------------------------------------------------------- select_reduce


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("pdt", [np.uint8, np.int16])
def test_select_reduce(target, reverse, pdt):
    x = rnd((6, 2, 4), seed=4)
    pred = (np.random.default_rng(5).integers(-1, 2, (6, 2, 4))).astype(pdt)
    on_false = rnd((6, 1), seed=6)
    got, res = isa(
        "select_reduce",
        [pred, x, on_false],
        {"predicate": {"t": 0}, "on_true": {"t": 1, "buf": "psum"}, "on_false": {"t": 2}},
        {
            "dst": {"shape": (6, 2, 4), "dtype": "float32"},
            "reduce_res": {"shape": (6, 1), "dtype": "float32"},
        },
        target=target,
        reverse_pred=reverse,
        reduce_cmd="rc.reset_reduce",
    )
    want = np.where((pred != 0) ^ reverse, x, on_false.reshape(6, 1, 1))
    assert_bits(got, want)
    assert_bits(res, want.reshape(6, -1).max(axis=1, keepdims=True))


@pytest.mark.parametrize("target", TARGETS)
def test_select_reduce_scalar_on_false_bf16(target):
    x = rnd((3, 5), BF16, seed=7)
    pred = np.eye(3, 5, dtype=np.uint8)
    got = isa(
        "select_reduce",
        [pred, x],
        {"predicate": {"t": 0}, "on_true": {"t": 1}, "on_false": -1.0},
        {"dst": {"shape": (3, 5), "dtype": "bfloat16"}},
        target=target,
    )
    assert_bits(got, np.where(pred != 0, x, BF16(-1.0)))


# ------------------------------------------------------------------------- sequence_bounds


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_sequence_bounds(target, dtype):
    ids = np.array([[1, 1, 2, 2, 2, 0, 0, 3, 1, 1]], dtype)
    got = isa(
        "sequence_bounds",
        [ids],
        {"segment_ids": {"t": 0}},
        {"dst": {"shape": (1, 2, 10), "dtype": np.dtype(dtype).name}},
        target=target,
    )
    n = ids.shape[1]
    start, end = np.zeros(n), np.zeros(n)
    for i in range(n):
        if ids[0, i] == 0:
            start[i], end[i] = n, -1
            continue
        s = i
        while s > 0 and ids[0, s - 1] == ids[0, i]:
            s -= 1
        e = i
        while e + 1 < n and ids[0, e + 1] == ids[0, i]:
            e += 1
        start[i], end[i] = s, e + 1  # exclusive end (docs/numerics.md §8)
    assert_bits(got, np.stack([start, end])[None].astype(dtype))


# ------------------------------------------------------------------------ gathers / shuffle


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("epi", "nvalid"), [(1, None), (2, 5), (4, 3)])
def test_local_gather(target, epi, nvalid):
    # per 16-partition core: the core's index slice read partition-first, the first
    # num_valid_indices entries; each is an element offset reading epi contiguous elements
    # (docs/numerics.md §8)
    P, F = 32, 16
    src = rnd((P, F), seed=8)
    idx = np.random.default_rng(9).integers(0, F // epi, (P, 2)).astype(np.uint16) * epi
    nidx = 16 * 2 if nvalid is None else nvalid
    attrs = {"num_elem_per_idx": epi}
    if nvalid is not None:
        attrs["num_valid_indices"] = nvalid
    got = isa(
        "local_gather",
        [src, idx],
        {"src_buffer": {"t": 0}, "index": {"t": 1}},
        {"dst": {"shape": (P, nidx * epi), "dtype": "float32"}},
        target=target,
        **attrs,
    )
    want = np.zeros((P, nidx * epi), np.float32)
    for core in range(P // 16):
        rows = slice(16 * core, 16 * core + 16)
        flat = [int(idx[16 * core + k % 16, k // 16]) for k in range(nidx)]
        cols = [o + e for o in flat for e in range(epi)]
        want[rows] = src[rows][:, cols]
    assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_nc_n_gather(target):
    data = rnd((6, 3, 4), seed=10)
    data[0, 0, 0] = np.nan
    idx = np.random.default_rng(11).integers(0, 12, (6, 7)).astype(np.uint32)
    idx[0, 0] = 0
    got = isa(
        "nc_n_gather",
        [data, idx],
        {"data": {"t": 0}, "indices": {"t": 1}},
        {"dst": {"shape": (6, 7), "dtype": "float32"}},
        target=target,
    )
    assert_bits(got, np.take_along_axis(data.reshape(6, 12), idx.astype(np.int64), axis=1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("P", "p0"), [(64, 0), (32, 96), (128, 0), (16, 32)])
def test_nc_stream_shuffle(target, P, p0):
    src = rnd((P, 5), seed=12)
    old = rnd((P, 5), seed=13)
    # lanes of a partial quadrant read only partitions that exist (compile-time check)
    mask = [((min(P, 32) - 1 - i) % min(P, 32)) if i % 5 else 255 for i in range(32)]
    got = isa(
        "nc_stream_shuffle",
        [src, old],
        {"src": {"t": 0, "buf": "psum", "p0": p0}},
        {"dst": {"shape": (P, 5), "dtype": "float32", "init": 1, "p0": p0}},
        target=target,
        shuffle_mask=mask,
    )
    want = old.copy()
    for p in range(P):
        q, i = divmod(p, 32)
        if mask[i] != 255 and q * 32 + mask[i] < P:
            want[p] = src[q * 32 + mask[i]]
    assert_bits(got, want)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_nonzero_with_count(target):
    P, F = 32, 8
    x = np.zeros((P, F), np.float32)
    x[0, [1, 4, 6]] = [1.0, np.nan, -2.0]
    x[0, 5] = -0.0
    x[16, :] = 1.0
    x[3, 2] = 7.0  # not an active partition
    old = np.full((P, F + 1), 77, np.int32)
    got = isa(
        "nonzero_with_count",
        [x, old],
        {"src": {"t": 0}},
        {"dst": {"shape": (P, F + 1), "dtype": "int32", "init": 1}},
        target=target,
        index_offset=100,
        padding_val=-5,
    )
    want = old.copy()
    for p in range(0, P, 16):
        nz = np.flatnonzero(x[p] != 0)  # NaN nonzero, -0 zero
        row = np.full(F + 1, -5, np.int64)
        row[: nz.size] = nz + 100
        row[F] = nz.size
        want[p] = row
    assert_bits(got, want)


# ---------------------------------------------------------------------------- max8 family


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_max8(target, dtype):
    x = rnd((5, 2, 20), seed=14).astype(dtype)
    x[1, 0, 3] = np.inf
    x[2, 1, 0] = x[2, 0, 0]  # a duplicate
    got = isa(
        "max8",
        [x],
        {"src": {"t": 0}},
        {
            "dst": {
                "shape": (5, 8),
                "dtype": np.dtype(dtype).name if dtype is not BF16 else "bfloat16",
            }
        },
        target=target,
    )
    want = -np.sort(-f32(x.astype(np.float32)).reshape(5, -1), axis=1)[:, :8]
    assert_bits(got, want.astype(dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("idt", ["uint32", "uint16"])
def test_nc_find_index8(target, idt):
    data = f32(np.random.default_rng(15).integers(0, 6, (4, 16)))
    vals = f32([[0, 1, 1, 2, 9, 5, 5, 5]] * 4)
    got = isa(
        "nc_find_index8",
        [data, vals],
        {"data": {"t": 0}, "vals": {"t": 1}},
        {"dst": {"shape": (4, 8), "dtype": idt}},
        target=target,
    )
    miss = np.iinfo(idt).max
    want = np.zeros((4, 8), np.int64)
    for p in range(4):
        used = {}
        for i, v in enumerate(vals[p]):
            pos = np.flatnonzero(data[p] == v)
            k = used.get(float(v), 0)  # duplicates advance through successive occurrences
            want[p, i] = pos[k] if k < pos.size else miss
            used[float(v)] = k + 1
    assert_bits(got, want.astype(idt))


@pytest.mark.parametrize("target", TARGETS)
def test_nc_match_replace8(target):
    data = f32(np.random.default_rng(16).integers(0, 5, (3, 2, 8)))
    vals = f32([[0, 1, 1, 4, 7, 2, 2, 3]] * 3)
    got, gidx = isa(
        "nc_match_replace8",
        [data, vals],
        {"data": {"t": 0}, "vals": {"t": 1}},
        {
            "dst": {"shape": (3, 2, 8), "dtype": "float32"},
            "dst_idx": {"shape": (3, 8), "dtype": "uint32"},
        },
        target=target,
        imm=-1.0,
    )
    want = data.reshape(3, 16).copy()
    widx = np.zeros((3, 8), np.int64)
    for p in range(3):
        for i in range(7, -1, -1):  # duplicates processed in reverse order
            pos = np.flatnonzero(want[p] == vals[p, i])
            if pos.size:
                want[p, pos[0]] = -1.0
                widx[p, i] = pos[0]
            else:
                widx[p, i] = 0xFFFFFFFF
    assert_bits(got, want.reshape(3, 2, 8))
    assert_bits(gidx, widx.astype(np.uint32))
