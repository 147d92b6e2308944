"""Loops kept symbolic and the same kernels unrolled give identical results (every `run`
compiles both); bodies that need the induction variable as a number unroll and stay right."""

from __future__ import annotations

import numpy as np
import pytest

from .harness import rand, run

X = rand((128, 512), seed=11)


def blocks(x, width):
    return [x[:, i : i + width] for i in range(0, x.shape[1], width)]


def test_sequential_accumulation_stays_one_loop():
    last, got = run("loops.py", "accumulate", loops=1, x=X)
    assert last[0, 0] == 3  # the last iteration's value after the loop
    np.testing.assert_allclose(got, sum(blocks(X, 128)), rtol=1e-5, atol=1e-5)


def test_list_of_tiles_built_in_a_loop_and_summed():
    got = run("loops.py", "listed", loops=0, x=X, width=64)
    np.testing.assert_allclose(got, sum(blocks(X, 64)), rtol=1e-5, atol=1e-5)


def test_branch_on_the_induction_variable_unrolls():
    count, got = run("loops.py", "first_differs", loops=0, x=X)
    assert count[0, 0] == 4
    want = np.concatenate(
        [b * (-1.0 if i == 0 else i + 1) for i, b in enumerate(blocks(X, 128))], 1
    )
    np.testing.assert_array_equal(got, want)


def test_nested_affine_matmul_stays_symbolic():
    lhsT, rhs = rand((256, 256), seed=12), rand((256, 512), seed=13)
    got = run("loops.py", "matmul", loops=3, lhsT=lhsT, rhs=rhs)
    want = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_ragged_tiles_with_min():
    x = rand((64, 250), seed=14)
    got = run("loops.py", "ragged", x=x)
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-5)


@pytest.mark.parametrize(("shift", "loops"), [(0, 2), (2, 1)])
def test_negative_indices_wrap_like_python(shift, loops):
    h = rand((4, 128, 32), seed=16)
    got = run("loops.py", "negative_indices", loops=loops, h=h, shift=shift)
    first = [h[-1 - b] for b in range(4)]
    second = [h[b - shift] for b in range(4)]
    np.testing.assert_array_equal(got, np.concatenate(first + second, axis=1))


def test_blocks_stored_at_decreasing_offsets():
    x = rand((128, 128), seed=17)
    got = run("loops.py", "reversed_blocks", loops=1, x=x)
    np.testing.assert_array_equal(got, np.concatenate(blocks(x, 32)[::-1], axis=1))


def test_loop_from_one_with_negative_offset_constants():
    x = rand((128, 32), seed=21)
    np.testing.assert_array_equal(run("shifted.py", "shifted", loops=1, a=x), x)
