"""offsets: element offsets split into signed mixed-radix parts, settled over loop ranges."""

from __future__ import annotations

import itertools
import random

import pytest

from nkic.ir.affine import Affine
from nkic.passes.bounds import CheckBounds
from nkic.passes.checks.regions import describe
from nkic.passes.offsets import digits, settle, split, strides

from .irtext import insts, kernel, run

i, j, k = Affine.var("i"), Affine.var("j"), Affine.var("k")


def test_strides_of_a_row_major_shape():
    assert strides((2, 3, 4)) == [12, 4, 1]
    assert strides((128,)) == [1]


@pytest.mark.parametrize(
    ("value", "want"),
    [(300, [2, 44]), (-300, [-2, -44]), (-32, [0, -32]), (1000, [7, 104]), (0, [0, 0])],
)
def test_digits_keep_the_sign_of_the_value(value, want):
    assert digits(value, (128, 1)) == want


def test_each_coefficient_splits_into_whole_rows_and_a_signed_remainder():
    assert split(17 * i, (16, 1)) == [i, i]
    assert split(5 - i, (16, 1)) == [0, 5 - i]  # stays inside the row
    assert split(2560 * k, strides((8, 4, 512))) == [k, k, 0]


def test_ranges_move_whole_units_into_the_coarser_part():
    from_one = {"i": (1, 4)}
    assert split(8 * i - 8, (512, 1), from_one) == [0, 8 * i - 8]
    assert split(64 * i - 8, (64, 1), from_one) == [i - 1, 56]
    assert split(65 * i - 9, (64, 1), from_one) == [i - 1, i + 55]
    assert split(65 * i - 9, (64, 1)) == [i, i - 9]  # no ranges: only constant parts move


def test_a_constant_settles_to_its_coordinates():
    assert split(Affine(-8), (512, 1)) == [-1, 504]
    assert split(Affine(-1), strides((2, 3, 4))) == [-1, 2, 3]
    assert settle([Affine(0), Affine(-1)], (4, 1), None) == [-1, 3]


def test_a_part_no_shift_can_place_stays_as_it_is():
    assert split(300 * i - 8, (512, 1), {"i": (0, 3)}) == [0, 300 * i - 8]
    assert split(k, strides((2, 4)), {"k": (0, 4)}) == [0, k]


def _shape(rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))


def _ranges(rng: random.Random) -> dict[str, tuple[int, int]]:
    out = {}
    for var in rng.sample("ijk", rng.randint(0, 3)):
        first = rng.randint(-2, 3)
        out[var] = (first, first + rng.randint(0, 3))
    return out


def _assignments(ranges):
    names = list(ranges)
    for values in itertools.product(*(range(a, b + 1) for a, b in ranges.values())):
        yield dict(zip(names, values))


def _coordinates(x: int, steps: list[int]) -> list[int]:
    """The coordinates of flat element `x`: floor digits, the first unbounded."""
    out = []
    for s in steps:
        q, x = divmod(x, s)
        out.append(q)
    return out


def _in_range(parts: list[Affine], shape, ranges) -> bool:
    """Whether every part but the first lies inside its dimension over `ranges`."""
    bounds = (p.bounds(ranges) for p in parts[1:])
    return all(0 <= lo and hi < d for (lo, hi), d in zip(bounds, shape[1:]))


def test_random_offsets_recombine_and_in_range_parts_are_coordinates():
    rng = random.Random(1)
    in_range = 0
    for _ in range(600):
        shape, ranges = _shape(rng), _ranges(rng)
        steps = strides(shape)
        total = steps[0] * shape[0]
        terms = {v: rng.randint(-total, total) for v in ranges}
        offset = Affine(rng.randint(-2 * total, 2 * total), terms)
        for known in (ranges, None):
            parts = split(offset, steps, known)
            exact = _in_range(parts, shape, ranges)
            in_range += exact
            for env in _assignments(ranges):
                x = offset.evaluate(env)
                got = [p.evaluate(env) for p in parts]
                assert sum(g * s for g, s in zip(got, steps)) == x, (offset, steps, known)
                if exact:
                    assert got == _coordinates(x, steps), (offset, steps, known)
    assert in_range > 300


def _slice_index(rng: random.Random, size: int, ranges, signs) -> Affine:
    """A random index inside [0, size) over `ranges`; variable v moves it in direction signs[v]
    (a variable with one value may have any coefficient, the constant any sign)."""
    room, terms = size - 1, {}
    for var in rng.sample(list(ranges), len(ranges)):
        a, b = ranges[var]
        terms[var] = signs[var] * rng.randint(0, room // (b - a) if b > a else 2 * size)
        room -= abs(terms[var]) * (b - a)
    index = Affine(0, terms)
    lo, hi = index.bounds(ranges)
    return index + rng.randint(-lo, size - 1 - hi)


def test_slices_inside_the_shape_split_into_their_indices():
    """An access inside the shape whose loop variables each move every dimension one way (as
    slicing produces) splits into exactly its per-dimension indices, in every iteration."""
    rng = random.Random(2)
    for _ in range(600):
        shape, ranges = _shape(rng), _ranges(rng)
        signs = {v: rng.choice((-1, 1)) for v in ranges}
        indices = [_slice_index(rng, d, ranges, signs) for d in shape]
        steps = strides(shape)
        offset = sum((e * s for e, s in zip(indices, steps)), Affine(0))
        parts = split(offset, steps, ranges)
        for env in _assignments(ranges):
            want = [e.evaluate(env) for e in indices]
            assert [p.evaluate(env) for p in parts] == want, (indices, ranges)
            assert want == _coordinates(offset.evaluate(env), steps)


HBM_LOOP = """
  for {loop} step 1 affine {{
    %t = alloc sbuf float32[1, {n}] "t"
    dma_copy(dst=%t[0; [{n}, 1], [1, {n}]], src=%a[{offset}; {pattern}]) {{}}
  }}"""


@pytest.mark.parametrize(
    ("shape", "loop", "offset", "pattern", "n"),
    [
        ("8, 64", "$i = 1 to 5", "64*$i - 8", "[64, 1], [1, 8]", 8),  # a[i - 1, 56:64]
        ("8, 4, 512", "$k = 0 to 4", "2560*$k", "[2048, 1], [512, 1], [1, 512]", 512),  # a[k, k]
    ],
)
def test_bounds_check_sees_slices_inside_hbm_tensors(shape, loop, offset, pattern, n):
    params = f'  param %a : hbm float32[{shape}] "a"\n'
    body = HBM_LOOP.format(loop=loop, n=n, offset=offset, pattern=pattern)
    assert run(CheckBounds(), kernel(body, params)) == []


def test_race_footprints_are_boxes_for_loops_from_one():
    body = """
  %out = alloc shared_hbm float32[2, 4, 16] "out"
  %t = alloc sbuf float32[2, 8] "t"
  for $i = 1 to 5 step 1 affine {
    dma_copy(dst=%out[16*$i - 8; [64, 2], [1, 8]], src=%t[0; [8, 2], [1, 8]]) {}
  }"""
    (copy,) = insts(kernel(body, returns="%out"), "dma_copy")
    assert describe(copy.operands["dst"], {"i": (1, 4)}) == "out[0:2, 0:4, 8:16]"
