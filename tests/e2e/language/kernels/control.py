"""Control flow at compile time: if/elif/else, conditional expressions, for over any iterable,
while, break/continue/pass, `is None` / `is not None`, `with nl.no_reorder()`."""

import nki
import nki.isa as nisa
import common
import nki.language as nl
from config import Op


def pick_tile(free, budget):
    """The largest tile width dividing `free` whose bytes fit `budget`, by a while search."""
    tile = free
    while tile * 4 > budget or free % tile != 0:
        tile -= 1
    return tile


def classify(n):
    if n < 0:
        kind = -1
    elif n == 0:
        kind = 0
    elif n < 10:
        kind = 1
    else:
        kind = 2
    return kind


@nki.jit
def control(x, budget=1000, bias=None, skip=None):
    P, F = x.shape
    tile = pick_tile(F, budget)
    evens = 0
    for i in range(10):
        if i == 7:
            break
        if i % 2:
            continue
        evens += i
    else:
        evens = -100  # not reached: the loop breaks
    done = 0
    for i in range(3):
        pass
    else:
        done = i + 1
    letters = 0
    for ch in "nki":
        letters = letters * 10 + (ord(ch) - ord("a")) if False else letters + 1
    members = 0
    for m in Op:
        members += len(m.value)
    weights = {"a": 1, "b": 2}
    wsum = 0
    for key, w in weights.items():
        wsum += w * (2 if key == "b" else 1)
    nested = [(1, 2), (3, 4)]
    prod = 0
    for a, b in nested:
        prod += a * b
    n = 0
    while True:
        n += 1
        if n * n > 50:
            break
    vals = [
        tile,
        evens,
        done,
        letters,
        members,
        wsum,
        prod,
        n,
        classify(-5) + 10 * classify(0) + 100 * classify(3) + 1000 * classify(42),
        bias is None,
        skip is not None,
        1 if bias is None and skip is None else 2,
    ]
    shift = 0.0 if bias is None else bias
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(F // tile):
        t = nl.ndarray((P, tile), x.dtype, buffer=nl.sbuf)
        with nl.no_reorder():
            nisa.dma_copy(dst=t, src=x[:, nl.ds(j * tile, tile)])
            if skip is None:
                nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=shift)
            else:
                nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=skip)
            nisa.dma_copy(dst=out[:, nl.ds(j * tile, tile)], src=t)
    return common.emit(vals), out
