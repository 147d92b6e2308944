"""Values: numbers with 32-bit integer semantics, strings, tuples, lists, dicts, builtins,
`math`, `functools`, `operator`, compile-time `print` and `assert` — each kernel's output is
the numbers it computed at compile time, plus its input scaled by some of them."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from .harness import rand, run

X = rand((128, 96), seed=1)


def f32(vals):
    return np.array([vals], dtype=np.float32)


def test_scalars_follow_python_and_int32_semantics():
    n, none = 7, None
    want = [
        -4, 2, -2, 32767, -32768, 0xFF0, 131072, ~7, 5, 15,
        3.5, 1.5, 0.25, -3, 1.75, round(2.675, 2) * 100,
        2, 0, 1, 1, 1, 0, 1, n,
    ]  # fmt: skip
    assert want[:3] == [-7 // 2, -7 % 3, 7 % -3] and none is None
    vals, y = run("values.py", "scalars", x=X)
    np.testing.assert_array_equal(vals, f32(want))
    np.testing.assert_allclose(y, X * -4 + 2, rtol=1e-6)


def test_strings_and_fstrings(capsys):
    vals, y = run("values.py", "strings", x=X)
    want = [7, 2.0, 4, 3, 5, 1, 2, 3, 4, 4, 1, 1]
    np.testing.assert_array_equal(vals, f32(want))
    np.testing.assert_allclose(y, X * 2 + 7, rtol=1e-6)
    vals4, y4 = run("values.py", "strings", x=X, n=4)
    assert vals4[0, 1] == 3.0
    np.testing.assert_allclose(y4, X * 3 + 7, rtol=1e-6)
    assert "strings: gelu_03 [7, 2.0, 4, 3, 5, True, 2, 3, 4, 4, True, True]" in (
        capsys.readouterr().err
    )


def test_tuples_and_list_methods():
    lst = [3, 1, 2]
    lst.append(5)
    lst.extend([8, 9])
    lst.insert(0, 0)
    last, first = lst.pop(), lst.pop(0)
    lst.remove(5)
    lst.reverse()
    assert lst == [8, 2, 1, 3]
    want = [4, 2, 6, 5, 4, 2, last, first, 4, 2, 3, 3, 1, 1, 83, 4]
    vals, y = run("values.py", "tuples_and_lists", x=X)
    np.testing.assert_array_equal(vals, f32(want))
    np.testing.assert_allclose(y, X * 8 + 2, rtol=1e-6)


def test_dicts_with_string_keys():
    # a=1 b=2 c=3 after e is set and popped; weighted = 1*1 + 2*2 + 3*3
    want = [11, 5, 1, 5, -1, 3, 1, 6, 6, 14, 3, 1]
    vals, y = run("values.py", "dicts", x=X)
    np.testing.assert_array_equal(vals, f32(want))
    np.testing.assert_allclose(y, X * 3 + 14, rtol=1e-6)


def test_builtins_math_functools_operator():
    P, F = X.shape
    want = [
        3, 1, 5, 2.5, 16, 6, 32, 3, 1, 1, 1, 1, *divmod(F, 48), 14, 1.5, 1,
        math.ceil(F / 100), -3, 7, P * F, 24, 123,
        operator.add(2, 3) + 6 + 4, -3 + 2,
    ]  # fmt: skip
    assert functools.reduce(lambda a, b: a * 10 + b, [1, 2, 3], 0) == 123
    vals, y = run("values.py", "builtins", x=X)
    np.testing.assert_array_equal(vals, f32(want))
    np.testing.assert_allclose(y, X * math.log2(F) + (P - F), rtol=1e-6)


def test_print_and_assert_run_at_compile_time(capsys):
    y = run("values.py", "checks", x=X, limit=3)
    np.testing.assert_allclose(y, X * 3, rtol=1e-6)
    err = capsys.readouterr().err
    assert "checks: NkiTensor(shape=(128, 96), dtype=float32, buffer=hbm" in err
    assert "limit=3" in err
