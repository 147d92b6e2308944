"""Functions: positional / keyword / default / *args / **kwargs, closures, functions as values,
recursion and early returns, all inlined at compile time."""

import nki
import nki.isa as nisa
import nki.language as nl
from common import emit


def combine(a, b=10, *rest, scale=1, **named):
    return (a + b + sum(rest)) * scale + sum(named.values())


def make_scaler(k):
    def scaler(v):
        return v * k

    return scaler


def compose(*fns):
    def run(v):
        for f in fns:
            v = f(v)
        return v

    return run


def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def largest_tile(free, limit):
    """Largest power of two dividing `free` and at most `limit` (early and multiple returns)."""
    if free % limit == 0:
        return limit
    for t in (256, 128, 64, 32):
        if t <= limit and free % t == 0:
            return t
    return 1


def apply_op(dst, src, op, operand):
    nisa.tensor_scalar(dst=dst, data=src, op0=op, operand0=operand)


@nki.jit
def functions(x, limit=512, scale_of=None):
    P, F = x.shape
    args = (1, 2, 3)
    kw = {"scale": 2, "extra": 5}
    counter = [0]

    def bump(by=1):
        counter[0] += by  # a closure mutating enclosing state
        return counter[0]

    bump()
    bump(by=4)
    ops = {"double": make_scaler(2), "inc": lambda v: v + 1}
    pipeline = compose(ops["double"], ops["inc"], make_scaler(10))
    vals = [
        combine(1),
        combine(1, 2),
        combine(*args),
        combine(*args, 4, scale=3),
        combine(1, **kw),
        combine(a=5, b=6),
        pipeline(3),
        counter[0],
        factorial(6),
        largest_tile(F, limit),
        largest_tile(96, 512),
        (lambda a, b=3: a * b)(4),
        max(map(make_scaler(3), [1, 4, 2])),
    ]
    tile = largest_tile(F, limit)
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(F // tile):
        t = nl.ndarray((P, tile), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, nl.ds(j * tile, tile)])
        apply_op(t, t, nl.multiply, float(factorial(3) if scale_of is None else scale_of(3)))
        apply_op(t, t, op=nl.add, operand=float(pipeline(1)))
        nisa.dma_copy(dst=out[:, nl.ds(j * tile, tile)], src=t)
    return emit(vals), out
