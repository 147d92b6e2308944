"""Compile-time values: each kernel writes the numbers its constructs compute to an output."""

import functools
import math
import operator

import nki
import nki.language as nl
from common import emit, scale_shift


@nki.jit
def scalars(x, n=7):
    none = None
    vals = [
        # 32-bit int semantics (Python rounding of // and %, two's complement bit ops)
        -7 // 2,
        -7 % 3,
        7 % -3,
        2147483647 // 65536,
        -(2**30) * 2 // 65536,
        0xFFFFFFFF & 0xFF0,
        (1 << 20) >> 3,
        ~n,
        n ^ 2,
        6 | 9,
        # floats
        7 / 2,
        1.5e-3 * 1000,
        2.0**-2,
        int(-3.7),
        float(n) / 4,
        round(2.675, 2) * 100,
        # bool
        True + True,
        bool(0),
        bool("s"),
        not none,
        none is None,
        none is not None,
        1 < 2 <= 2 < 3,
        n if n > 5 else -n,
    ]
    return emit(vals), scale_shift(x, vals[0], vals[1])


@nki.jit
def strings(x, name="gelu", n=3):
    label = f"{name}_{n:02d}"
    table = {"gelu_03": 2.0, "gelu_04": 3.0}
    s = "a,bb,ccc"
    vals = [
        len(label),
        table[label],
        label.find("_"),
        len(s.split(",")[2]),
        len("-".join(["x", "y", "z"])),
        label.upper() == "GELU_03",
        label.startswith("ge") + label.endswith("3"),
        int(label[-2:]),
        len(f"{3.14159:.2f}"),
        len(str(n) * 4),
        "b" in s,
        "{}{}".format(1, 2) == "12",
    ]
    print("strings:", label, vals)
    return emit(vals), scale_shift(x, table[label], float(len(label)))


@nki.jit
def tuples_and_lists(x):
    t = (4, 5, 6)
    a, *rest = t
    lst = [3, 1, 2]
    lst.append(5)
    lst.extend([8, 9])
    lst.insert(0, 0)
    last = lst.pop()
    first = lst.pop(0)
    lst.remove(5)
    lst.reverse()
    where = lst.index(1)
    window = lst[1:3]
    back = lst[::-1]
    vals = [
        a,
        len(rest),
        t[-1],
        t[1:][0],
        len(t + (7,)),
        t.index(6),
        last,
        first,
        len(lst),
        where,
        sum(window),
        back[0],
        8 in lst,
        7 not in lst,
        lst[0] * 10 + lst[-1],
        len([i for i in range(10) if i % 3 == 0]),
    ]
    return emit(vals), scale_shift(x, float(lst[0]), float(where))


@nki.jit
def dicts(x):
    d = {"a": 1, "b": 2}
    d["c"] = 3
    got = d.get("a") + d.get("zz", 10)
    first = d.setdefault("e", 5)
    again = d.setdefault("a", 9)
    popped = d.pop("e")
    missing = d.pop("q", -1)
    keys = "".join(d.keys())
    total = 0
    for k in d:
        total += d[k]
    weighted = 0
    for i, (k, v) in enumerate(d.items()):
        weighted += (i + 1) * v
    vals = [
        got,
        first,
        again,
        popped,
        missing,
        len(keys),
        keys == "abc",
        sum(d.values()),
        total,
        weighted,
        len(d),
        "b" in d,
    ]
    return emit(vals), scale_shift(x, float(d["c"]), float(weighted))


@nki.jit
def builtins(x):
    P, F = x.shape
    q, r = divmod(F, 48)
    vals = [
        len(range(2, 10, 3)),
        min(3, 1, 2),
        max([1, 5, 2]),
        abs(-2.5),
        sum([1, 2, 3], 10),
        sum(i for i, _ in enumerate("abcd")),
        sum(a * b for a, b in zip([1, 2, 3], [4, 5, 6])),
        list(reversed([1, 2, 3]))[0],
        sorted([3, 1, 2])[0],
        sorted(["bb", "a", "ccc"], key=len, reverse=True)[0] == "ccc",
        isinstance(P, int),
        isinstance(x.shape, tuple) + isinstance(1.0, int),
        q,
        r,
        int("12") + int(2.9),
        float("1.5"),
        bool([]) + bool([0]),
        math.ceil(F / 100),
        math.floor(-2.5),
        math.log2(P),
        math.prod(x.shape),
        functools.reduce(operator.mul, [1, 2, 3, 4]),
        functools.reduce(lambda a, b: a * 10 + b, [1, 2, 3], 0),
        operator.add(2, 3) + operator.sub(10, 4) + operator.floordiv(9, 2),
        operator.neg(3) + operator.mod(10, 4),
    ]
    scale = functools.reduce(operator.add, [0.25, 0.25, 0.5])
    return emit(vals), scale_shift(x, scale * math.log2(F), float(max(x.shape) - min(x.shape)))


@nki.jit
def checks(x, limit=8):
    P, F = x.shape
    assert P <= 128, f"one tile: at most 128 rows, got {P}"
    print("checks:", x)
    print(f"limit={limit}")
    return scale_shift(x, float(limit), 0.0)
