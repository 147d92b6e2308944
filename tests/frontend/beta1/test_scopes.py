"""Beta 1 block scoping: a tensor defined inside an if / else / for block cannot be used after
the block (err_local_variable_used_out_of_scope); current NKI follows Python's rebinding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic

KERNELS = str(Path(__file__).parent / "scoped_tiles.py")
CODE = "err_local_variable_used_out_of_scope"


def _errors(kernel, **args):
    return [d for d in nkic.check(KERNELS, kernel=kernel, **args) if d.severity == "error"]


@pytest.mark.parametrize(
    ("kernel", "args", "line", "block"),
    [
        ("chosen_in_branches", {"first": True}, 17, "if block at line 13"),
        ("chosen_in_branches", {"first": False}, 17, "else block of the if at line 13"),
        ("rebound_in_a_loop", {}, 42, "for block at line 39"),
        ("in_a_helper", {}, 63, "if block at line 59"),
    ],
)
def test_a_tensor_used_after_its_block_is_an_error(kernel, args, line, block):
    a = np.zeros((128, 64), np.float32)
    more = {"b": a} if kernel != "rebound_in_a_loop" else {}
    diags = _errors(kernel, a=a, **more, **args)
    assert [(d.code, d.loc.line) for d in diags] == [(CODE, line)]
    assert block in diags[0].message and "nl.ndarray" in diags[0].hint


def test_a_tensor_created_before_the_block_and_written_in_it_is_visible():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(2))
    for first, want in ((True, a), (False, b)):
        k = nkic.compile(KERNELS, a, b, first, kernel="written_in_branches")
        np.testing.assert_array_equal(k(a, b), want)
    out = nkic.compile(KERNELS, a, kernel="updated_in_a_loop")(a)
    np.testing.assert_allclose(out, 4.0 * a.astype(np.float64), rtol=1e-6, atol=1e-6)


def test_tiles_used_inside_their_block_and_outer_tiles_stay_visible():
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    assert _errors("used_in_the_block", a=a) == []
    out = nkic.compile(KERNELS, a, kernel="used_in_the_block")(a)
    np.testing.assert_allclose(out, a.astype(np.float64) + 0.5, rtol=1e-6, atol=1e-6)


CURRENT = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a, b, first):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    if first:
        tmp = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tmp, src=a)
    else:
        tmp = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tmp, src=b)
    nisa.dma_copy(dst=out, src=tmp)
    return out
"""


def test_current_nki_keeps_a_tensor_bound_in_a_branch(tmp_path):
    path = tmp_path / "branches.py"
    path.write_text(CURRENT)
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(2))
    for first, want in ((True, a), (False, b)):
        np.testing.assert_array_equal(nkic.compile(str(path), a, b, first)(a, b), want)
