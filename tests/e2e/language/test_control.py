"""Control flow resolved at compile time: the tile width comes from a while-loop search, and
branches on `is None` arguments pick the instruction."""

from __future__ import annotations

import numpy as np

from .harness import rand, run

X = rand((64, 600), seed=6)


def pick_tile(free, budget):
    tile = free
    while tile * 4 > budget or free % tile != 0:
        tile -= 1
    return tile


def test_control_flow_constructs():
    # evens: 0+2+4+6; for-else after no break: i + 1; members: "add" "mul" "max"
    want = [pick_tile(600, 1000), 12, 3, 3, 9, 5, 14, 8, -1 + 0 + 100 + 2000, 1, 0, 1]
    vals, y = run("control.py", "control", x=X)
    np.testing.assert_array_equal(vals, np.array([want], np.float32))
    np.testing.assert_array_equal(y, X)


def test_branches_follow_arguments():
    vals, y = run("control.py", "control", x=X, budget=480, bias=1.5)
    assert vals[0, 0] == pick_tile(600, 480) == 120 and vals[0, 9] == 0
    np.testing.assert_allclose(y, X + 1.5, rtol=1e-6)
    vals, y = run("control.py", "control", x=X, skip=-2.0)
    assert vals[0, 10] == 1 and vals[0, 11] == 2
    np.testing.assert_array_equal(y, X * -2)
