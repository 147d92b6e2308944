"""Beta 1: `nl.shared_hbm` tensors are allocated at the kernel's top level, not under an
`if` / `else` or in a called function (err_shared_hbm_must_in_kernel_level)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic

KERNELS = Path(__file__).parent / "shared_placement.py"
CODE = "err_shared_hbm_must_in_kernel_level"


@pytest.mark.parametrize(
    ("kernel", "args", "line", "where"),
    [
        ("in_a_branch", {"twice": True}, 10, "under an if / else"),
        ("in_a_branch", {"twice": False}, 13, "under an if / else"),
        ("in_a_helper", {}, 19, "in a called function"),
    ],
)
def test_shared_hbm_away_from_the_top_level_is_an_error(kernel, args, line, where):
    a = np.zeros((128, 512), np.float32)
    diags = [
        d for d in nkic.check(str(KERNELS), kernel=kernel, a=a, **args) if d.severity != "note"
    ]
    assert [(d.code, d.loc.line) for d in diags] == [(CODE, line)]
    assert where in diags[0].message and diags[0].hint


@pytest.mark.parametrize("twice", [True, False])
def test_allocated_at_the_top_level_and_written_in_a_branch_or_helper(twice):
    a = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(KERNELS), a, twice, kernel="at_top_level")(a)
    np.testing.assert_array_equal(out, a + a if twice else a)
