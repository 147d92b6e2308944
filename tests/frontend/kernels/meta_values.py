"""Compile-time values: numbers, strings, f-strings, tuples, lists, dicts and builtins."""

import functools
import math
import operator

import nki
import nki.language as nl
import numpy as np


@nki.jit
def values(x, n=7, name="k", dims=(3, 4), flag=True):
    # numbers
    assert 7 // 2 == 3 and -7 // 2 == -4 and 7 % 3 == 1 and 2**10 == 1024
    assert 7 / 2 == 3.5 and abs(-2.5) == 2.5 and round(2.6) == 3
    assert 1 << 4 == 16 and 0xF0 >> 4 == 15 and 6 & 3 == 2 and 6 | 1 == 7 and 6 ^ 2 == 4
    assert int(3.9) == 3 and float(2) == 2.0 and not bool(0) and int("12") == 12
    assert divmod(17, 5) == (3, 2) and -n == -7 and +n == 7 and ~0 == -1
    assert 1 < 2 <= 2 < 3 and not (1 > 2) and 1 != 2
    # strings and f-strings
    s = f"{name}_{n:03d}_{2.5:.1f}_{dims!r}"
    assert s == "k_007_2.5_(3, 4)", s
    assert "ab" + "c" == "abc" and "x" * 3 == "xxx" and "b" in "abc"
    assert "a,b".split(",") == ["a", "b"] and "-".join(["a", "b"]) == "a-b"
    assert "{}:{}".format(1, "z") == "1:z" and "Ab".lower() == "ab" and "ab".upper() == "AB"
    assert str(5) == "5" and repr("q") == "'q'" and len("abc") == 3
    # tuples
    t = (1, 2, 3)
    a, *rest = t
    assert a == 1 and rest == [2, 3] and t[-1] == 3 and t[1:] == (2, 3) and len(t) == 3
    assert t + (4,) == (1, 2, 3, 4) and t.index(2) == 1 and t.count(1) == 1
    P, F = x.shape
    assert (P, F) == (128, 256)
    # lists
    lst = [3, 1, 2]
    lst.append(5)
    lst.extend([8, 9])
    lst.insert(0, 0)
    assert lst.pop() == 9 and lst.pop(0) == 0
    lst.remove(5)
    lst.reverse()
    assert lst == [8, 2, 1, 3] and lst.index(1) == 2 and 2 in lst and 7 not in lst
    lst[0] = 4
    lst += [6]
    assert lst == [4, 2, 1, 3, 6] and lst[1:3] == [2, 1] and lst[::-1][0] == 6
    lst.sort()
    assert lst == [1, 2, 3, 4, 6] and sorted([3, 1], reverse=True) == [3, 1]
    assert [i * i for i in range(4) if i % 2 == 0] == [0, 4]
    assert list(reversed([1, 2])) == [2, 1] and [1] * 3 == [1, 1, 1]
    del lst[0]
    assert lst == [2, 3, 4, 6]
    # dicts
    d = {"a": 1, "b": 2}
    d["c"] = 3
    assert d.get("a") == 1 and d.get("z", 0) == 0 and "a" in d
    assert d.setdefault("e", 5) == 5 and d.setdefault("a", 9) == 1
    assert d.pop("e") == 5 and d.pop("zz", None) is None
    assert list(d.keys()) == ["a", "b", "c"] and list(d.values()) == [1, 2, 3]
    assert [k + str(v) for k, v in d.items()] == ["a1", "b2", "c3"]
    assert [k for k in d] == ["a", "b", "c"] and len(d) == 3
    assert {k: v * 2 for k, v in d.items()}["c"] == 6 and dict(x=1) == {"x": 1}
    assert {**d, "z": 0}["z"] == 0
    # builtins
    assert len(range(2, 10, 3)) == 3 and list(range(3)) == [0, 1, 2]
    assert min(3, 1, 2) == 1 and max([1, 5, 2]) == 5 and min([], default=4) == 4
    assert max(["aa", "b"], key=len) == "aa"
    assert sum([1, 2, 3]) == 6 and sum([[1], [2]], []) == [1, 2]
    assert list(enumerate("ab", 1)) == [(1, "a"), (2, "b")]
    assert list(zip([1, 2], "ab")) == [(1, "a"), (2, "b")]
    assert any([0, 1]) and all([1, 1]) and not all([0])
    assert isinstance(n, int) and isinstance(name, (int, str)) and not isinstance(n, float)
    assert isinstance(dims, tuple) and isinstance([], list) and isinstance({}, dict)
    assert list(map(lambda v: v + 1, [1, 2])) == [2, 3]
    assert list(filter(None, [0, 1, 2])) == [1, 2]
    assert tuple([1, 2]) == (1, 2) and list((1,)) == [1]
    assert x.shape == (128, 256) and hasattr(x, "dtype") and not hasattr(x, "zz")
    # math / functools / operator / numpy names
    assert math.ceil(2.1) == 3 and math.floor(2.9) == 2 and math.log2(1024) == 10
    assert math.prod([2, 3, 4]) == 24 and math.gcd(12, 18) == 6 and math.sqrt(16) == 4
    assert math.isclose(math.pi, 3.14159, rel_tol=1e-3)
    assert functools.reduce(operator.add, [1, 2, 3], 10) == 16
    assert functools.partial(operator.mul, 3)(4) == 12
    assert operator.itemgetter(1)([5, 6]) == 6 and operator.neg(2) == -2
    assert np.float32 == nl.float32 and np.prod((2, 3)) == 6
    # None and truthiness
    v = None
    assert v is None and x is not None and not v and (v or 3) == 3 and (1 and 2) == 2
    assert (5 if flag else 6) == 5
    y = (z := 4) + 1
    assert y == 5 and z == 4
    assert x.dtype == nl.float32 and x.dtype == "float32"
    print("values ok", n, dims, x)
    print(f"{x.shape}")
