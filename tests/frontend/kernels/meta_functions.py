"""Functions: positional/keyword/default args, *args/**kwargs, closures, recursion, returns."""

from __future__ import annotations

import nki
import nki.isa as nisa
import nki.language as nl


def add(a, b=10, *rest, scale=1, **extra):
    return (a + b + sum(rest)) * scale + len(extra)


def make_counter(start):
    def step(k):
        return start + k

    return step


def compose(f, g):
    return lambda v: f(g(v))


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def classify(v):
    if v < 0:
        return "neg"
    elif v == 0:
        return "zero"
    return "pos"


def nothing():
    pass


def copy_tile(dst, src, engine=None):
    if engine is None:
        nisa.tensor_copy(dst=dst, src=src)
    else:
        nisa.tensor_copy(dst=dst, src=src, engine=engine)


def only_positional(a, /, b):
    return a - b


@nki.jit
def functions(x):
    assert add(1) == 11 and add(1, 2) == 3 and add(1, 2, 3, 4) == 10
    assert add(1, b=2, scale=2) == 6 and add(a=1, b=1, z=0, w=0) == 4
    args = (1, 2)
    kw = {"scale": 3}
    assert add(*args, **kw) == 9
    assert make_counter(5)(2) == 7
    inc = make_counter(1)
    double = lambda v: v * 2  # noqa: E731
    assert compose(inc, double)(3) == 7 and compose(double, inc)(3) == 8
    assert fib(10) == 55
    assert [classify(v) for v in (-1, 0, 1)] == ["neg", "zero", "pos"]
    assert nothing() is None
    assert only_positional(5, b=2) == 3
    table = {"inc": inc, "double": double}
    assert table["double"](table["inc"](1)) == 4
    fns = [inc, double]
    assert [f(1) for f in fns] == [2, 2]
    P, F = x.shape
    a = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    copy_tile(b, a)
    copy_tile(a, b, engine=nisa.engine.scalar)
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
