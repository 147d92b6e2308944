"""max8, nc_find_index8, nc_match_replace8."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from nkirt.isa import SEMANTICS

BF16 = ml_dtypes.bfloat16
F = np.float32


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def test_max8_descending_per_partition(ctx):
    src = np.random.default_rng(0).standard_normal((3, 2, 10)).astype(BF16)
    got = run(ctx, "max8", {"src": src})["dst"]
    for p in range(3):
        values = sorted((float(v) for v in src[p].reshape(-1)), reverse=True)[:8]
        np.testing.assert_array_equal(got[p], values)


def test_max8_keeps_duplicates(ctx):
    src = np.array([[5, 1, 5, 2, 2, 9, 0, 5, -1, 3]], F)
    np.testing.assert_array_equal(run(ctx, "max8", {"src": src})["dst"], [[9, 5, 5, 5, 3, 2, 2, 1]])


def test_find_index8_first_occurrences_duplicates_and_missing(ctx):
    data = np.array([[4, 7, 4, 1, 4, 9, 7, 0, 2, 3]], F)
    vals = np.array([[4, 4, 7, 42, 4, 4, 0, 7]], F)
    got = run(ctx, "nc_find_index8", {"data": data, "vals": vals})["dst"]
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, [[0, 2, 1, 0xFFFFFFFF, 4, 0xFFFFFFFF, 7, 6]])
    small = run(ctx, "nc_find_index8", {"data": data, "vals": vals}, _dtypes={"dst": "uint16"})[
        "dst"
    ]
    assert small.dtype == np.uint16 and small[0, 3] == 0xFFFF


def test_match_replace8_in_reverse_value_order(ctx):
    data = np.array([[3, 1, 3, 2, 3, 5, 6, 7, 8, 9]], BF16)
    vals = np.array([[3, 3, 2, 4, 6, 7, 8, 9]], F)
    got = run(ctx, "nc_match_replace8", {"data": data, "vals": vals}, imm=-1.0)
    np.testing.assert_array_equal(got["dst"].astype(F), [[-1, 1, -1, -1, 3, 5, -1, -1, -1, -1]])
    assert got["dst"].dtype == BF16
    # value 3 at i = 1 is processed before i = 0, so it takes the first occurrence
    np.testing.assert_array_equal(got["dst_idx"], [[2, 0, 3, 0xFFFFFFFF, 6, 7, 8, 9]])


def test_match_replace8_keeps_unmatched_bits(ctx):
    data = np.array([[np.nan, -0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], F)
    vals = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], F)
    got = run(ctx, "nc_match_replace8", {"data": data, "vals": vals}, imm=0.0)["dst"]
    assert np.isnan(got[0, 0]) and got.view(np.uint32)[0, 1] == 0x80000000
    np.testing.assert_array_equal(got[0, 2:], 0)
