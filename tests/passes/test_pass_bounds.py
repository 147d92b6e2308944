"""check-bounds: interval arithmetic over loop ranges, without enumerating iterations."""

from __future__ import annotations

import pytest

from nkic.ir.printer import print_kernel
from nkic.passes.bounds import CheckBounds

from .irtext import at, kernel, run, tile

PARAMS = '  param %a : hbm float32[128, 8192] "a"\n'


def load(offset: str, trips: int, step: int = 1, f: int = 512, line: int = 7) -> str:
    return f"""
  for $i = 0 to {trips} step {step} affine {at(6)} {{
    %t = alloc sbuf float32[128, {f}] "t"
    dma_copy(dst={tile("t", 128, f)}, src={tile("a", 128, f, offset=offset, row=8192)}) {{}} {at(line)}
  }}"""


def check(body: str):
    return run(CheckBounds(), kernel(body, PARAMS))


def test_in_bounds_symbolic_loop_passes():
    assert check(load("512*$i", 16)) == []
    assert check(load("$i", 8192 - 512 + 1)) == []


def test_off_by_one_at_the_last_iteration():
    diags = check(load("512*$i + 1", 16, line=7))
    assert [d.code for d in diags] == ["err_tensor_access_out_of_bound"]
    d = diags[0]
    assert d.loc.line == 7 and d.loc.file == "kernel.py"
    assert "tensor 'a' by operand 'src' of dma_copy" in d.message
    assert "indices of dimension 1 [1, 8192] accessed, the dimension has indices [0, 8191]" in (
        d.message
    )
    assert "out of bounds when i=15 (loop at line 6)" in d.message


def test_failing_iterations_are_a_range():
    d = check(load("256*$i", 32))[0]
    assert "when i=31" in d.message
    d = check(load("512*$i", 40))[0]
    assert "when i >= 16" in d.message


def test_negative_offsets_fail_at_the_first_iterations():
    d = check(load("512*$i - 1024", 16))[0]
    assert "dimension 1 [-1024, 7167]" in d.message and "when i <= 1" in d.message


def test_huge_trip_counts_cost_nothing():
    # a loop of 10**15 iterations: IR size is constant and nothing is enumerated
    body = load("$i", 10**15, f=8)
    k = kernel(body, PARAMS)
    assert len(print_kernel(k).splitlines()) < 12
    d = run(CheckBounds(), k)[0]
    assert f"i >= {8192 - 8 + 1}" in d.message


def test_loop_step_lattice_is_respected():
    # values 0, 3, 6, 9, 12: the access passes the end of `a` once 1024*i > 7680
    d = check(load("1024*$i", 15, step=3))[0]
    assert "when i >= 9" in d.message


def test_partition_range_of_on_chip_tensors():
    body = f"""
  %t = alloc sbuf float32[64, 512] "t"
  for $p = 0 to 2 step 1 affine {{
    memset(dst=%t[16384*$p; [512, 64], [1, 512]]) {{value=0.0}} {at(5)}
  }}"""
    # 16384 elements = 32 partitions: the second iteration reaches partitions [32, 95]
    diags = check(body)
    assert len(diags) == 1
    assert "partitions [0, 95] accessed, the tensor has partitions [0, 63]" in diags[0].message
    assert "out of bounds when p=1" in diags[0].message


def test_free_range_inside_each_partition():
    body = f"""
  %t = alloc sbuf float32[128, 512] "t"
  memset(dst=%t[256; [512, 128], [1, 512]]) {{value=0.0}} {at(5)}"""
    d = check(body)[0]
    assert "indices of dimension 1 [256, 767] accessed" in d.message
    assert "the dimension has indices [0, 511]; out of bounds in every iteration" in d.message


def test_reinterpreted_views_use_their_dtype():
    body = """
  %t = alloc sbuf float32[128, 512] "t"
  memset(dst=%t[0; [1024, 128], [1, 1024]] : bfloat16) {value=0.0}
  memset(dst=%t[0; [1024, 128], [1, 1025]] : bfloat16) {value=0.0}"""
    diags = check(body)
    assert len(diags) == 1
    assert "[0, 1024] accessed (in bfloat16 elements), a partition holds elements [0, 1023]" in (
        diags[0].message
    )


@pytest.mark.parametrize("trips", [0])
def test_loops_that_never_run_are_not_checked(trips):
    assert check(load("100000*$i", trips)) == []


def test_a_slice_running_past_the_end_of_a_row_is_caught_before_the_last_row():
    # rows 0..63 of `a`: storage continues after each row, the dimension does not
    body = f"""
  for $i = 0 to 16 step 1 affine {{
    %t = alloc sbuf float32[64, 512] "t"
    dma_copy(dst={tile("t", 64, 512)}, src=%a[512*$i + 1; [8192, 64], [1, 512]]) {{}} {at(7)}
  }}"""
    d = check(body)
    assert len(d) == 1 and "dimension 1 [1, 8192]" in d[0].message
    assert "when i=15" in d[0].message


def test_custom_patterns_are_checked_against_storage():
    # two rows per partition through one contiguous pair: legal, the storage holds it
    body = """
  %t = alloc sbuf float32[64, 16384] "t"
  dma_copy(dst=%t[0; [16384, 64], [1, 16384]], src=%a[0; [16384, 64], [1, 16384]]) {}"""
    assert check(body) == []


def test_three_dimensional_tiles_are_checked_per_dimension():
    body = f"""
  %t = alloc sbuf float32[128, 4, 512] "t"
  for $k = 0 to 5 step 1 affine {{
    memset(dst=%t[512*$k; [2048, 128], [1, 512]]) {{value=0.0}} {at(9)}
  }}"""
    d = check(body)
    assert len(d) == 1
    assert "indices of dimension 1 [0, 4] accessed, the dimension has indices [0, 3]" in (
        d[0].message
    )
    assert "when k=4" in d[0].message


def test_repeated_constant_access_is_reported_at_every_site():
    # unrolled code repeats patterns: an access found in bounds is not checked again, one
    # out of bounds is reported wherever it occurs
    copy = "dma_copy(dst={}, src={}) {{}} {}"
    good = tile("a", 128, 512, offset="512", row=8192)
    bad = tile("a", 128, 512, offset="7681", row=8192)
    lines = [
        '  %t = alloc sbuf float32[128, 512] "t"',
        *(f"  {copy.format(tile('t', 128, 512), src, at(n))}" for n, src in
          ((7, good), (8, bad), (9, good), (10, bad))),
    ]  # fmt: skip
    diags = check("\n".join(lines))
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_tensor_access_out_of_bound", 8),
        ("err_tensor_access_out_of_bound", 10),
    ]
