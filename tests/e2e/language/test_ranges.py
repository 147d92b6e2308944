"""Python `range` / `nl.static_range` / `nl.range` loops: the symbolic form (one sequential
loop, split where a comparison on the variable changes) and every loop unrolled give
identical results (every `run` compiles both), and bodies Python needs per iteration unroll."""

from __future__ import annotations

import numpy as np
import pytest

from .harness import rand, run


@pytest.mark.parametrize(("width", "loops"), [(250, 1), (256, 1), (200, 1)])
def test_ragged_tiles_split_instead_of_unrolled(width, loops):
    # full tiles in one loop; the narrow last tile (if any) and the `break` run concretely
    x = rand((64, 4 * width - 100 if width == 250 else 4 * width), seed=3)
    got = run("ranges.py", "ragged_exp", loops=loops, x=x, width=128)
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-5)


def test_static_range_accumulates_in_one_loop_and_keeps_the_last_value():
    x = rand((128, 512), seed=4)
    last, got = run("ranges.py", "running_sum", loops=1, x=x)
    assert last[0, 0] == 3
    want = sum(x[:, i : i + 128] for i in range(0, 512, 128))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("stop", "loops", "reached"), [(0, 0, 0), (2, 1, 0), (3, 1, 0), (7, 1, 1)])
def test_break_at_an_iteration_splits_the_loop_around_it(stop, loops, reached):
    x = rand((128, 512), seed=5)
    flag, got = run("ranges.py", "stop_at", loops=loops, x=x, stop=stop)
    assert flag[0, 0] == reached
    want = x.copy()
    want[:, : 128 * min(stop, 4)] *= -1
    np.testing.assert_array_equal(got, want)


def test_tile_read_after_the_loop_unrolls_it():
    x = rand((128, 512), seed=6)
    got = run("ranges.py", "last_tile_after", loops=0, x=x)
    np.testing.assert_array_equal(got, x[:, 384:] + np.float32(1.0))


def test_compile_time_state_unrolls():
    x = rand((128, 384), seed=7)
    counts, got = run("ranges.py", "python_state", loops=0, x=x)
    assert counts.tolist() == [[3.0, 3.0]]
    want = np.concatenate([x[:, i * 128 : (i + 1) * 128] * (i + 1) for i in range(3)], 1)
    np.testing.assert_array_equal(got, want)


def test_generator_loop_yields_every_iteration():
    listed, summed = run("ranges.py", "yields", x=rand((1, 1)))
    assert listed.tolist() == [[0.0, 2.0, 4.0, 6.0]]
    assert summed.tolist() == [[6.0]]


@pytest.mark.parametrize(("shape", "loops"), [((128, 384), 2), ((100, 300), 3)])
def test_nested_ragged_loops(shape, loops):
    x = rand(shape, seed=8)
    got = run("ranges.py", "nested_ragged", loops=loops, x=x)
    np.testing.assert_array_equal(got, x * np.float32(2.0))
