"""Functions (all call forms, closures, functions as values, recursion, early returns) and
classes (NKIObject, dataclass, enum; Python instances as kernel arguments), end to end."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from .harness import KERNELS, rand, run

X = rand((128, 768), seed=2)


@pytest.fixture(scope="module")
def config():
    sys.path.insert(0, str(KERNELS))
    try:
        import config

        yield config
    finally:
        sys.path.remove(str(KERNELS))


def test_functions_inline_with_python_semantics():
    # combine(a, b=10, *rest, scale=1, **named) = (a + b + sum(rest)) * scale + sum(named)
    want = [11, 3, 6, 30, 27, 11, 70, 5, math.factorial(6), 256, 32, 12, 12]
    vals, y = run("functions.py", "functions", x=X)
    np.testing.assert_array_equal(vals, np.array([want], np.float32))
    # each tile: x * 3! + pipeline(1), pipeline(v) = (2v + 1) * 10
    np.testing.assert_allclose(y, X * 6 + 30, rtol=1e-6)


def test_largest_tile_follows_the_argument():
    vals, y = run("functions.py", "functions", x=X, limit=768)
    assert vals[0, 9] == 768
    np.testing.assert_allclose(y, X * 6 + 30, rtol=1e-6)


def test_function_passed_from_python(config):
    _, y = run("functions.py", "functions", x=X, scale_of=config.square)
    np.testing.assert_allclose(y, X * 9 + 30, rtol=1e-6)


def test_classes_and_enum_select_the_operator(config):
    x, y = rand((128, 64), seed=3), rand((128, 64), seed=4)
    want = [2, -2, 18, 31, 2, 1, 1, 256, 512, 4, 4, 64, 64, 1, 1, 3, 1, 1, 3, 1, 0, 51, 3, 4, -4]
    vals, got = run("classes.py", "classes", x=x, y=y)
    np.testing.assert_array_equal(vals, np.array([want], np.float32))
    np.testing.assert_array_equal(got, x * y)
    for op, ref in [(config.Op.ADD, x + y), (config.Op.MAX, np.maximum(x, y))]:
        vals, got = run("classes.py", "classes", x=x, y=y, op=op)
        np.testing.assert_array_equal(got, ref)
        assert vals[0, 14] == 0 and vals[0, 16] == 0  # op.value == "mul", op == Op.MUL


def test_python_dataclass_instance_as_argument(config):
    cfg = config.Tiling(2, cols=16, scale=0.25)
    vals, _ = run("classes.py", "classes", x=X[:, :64], y=X[:, 64:128], cfg=cfg)
    assert vals[0, 7] == 32 and vals[0, 8] == 64  # elems before and after widen(2)
    assert cfg.cols == 16  # the kernel mutated its own copy
    x = rand((128, 64), seed=5)
    got = run("classes.py", "scaled", x=x, cfg=cfg, shape=(128, 64))
    np.testing.assert_allclose(got, x * (0.25 * 4), rtol=1e-6)


@pytest.mark.parametrize(("args", "scale", "shift"), [((2.0, 0.5), 2.0, 0.5), ((3.0,), 3.0, -3.0)])
def test_python_nkiobject_instance_as_argument(config, args, scale, shift):
    post = config.Epilogue(*args)
    assert (post.scale, post.shift) == (scale, shift)  # the host-side class behaves alike
    x = rand((64, 128), seed=6)
    got = run("classes.py", "epilogue", x=x, post=post)
    np.testing.assert_allclose(got, x * scale + shift, rtol=1e-6)
