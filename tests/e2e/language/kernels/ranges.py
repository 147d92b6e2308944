"""Python `range` loops: kept as one sequential loop where that is provably the same as
unrolling them (split where a comparison on the variable changes), unrolled where Python
needs each iteration; both paths must compute the same thing."""

import nki
import nki.isa as nisa
import nki.language as nl
from common import emit


def load(x, start, width):
    t = nl.ndarray((x.shape[0], width), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:width], src=x[:, nl.ds(start, width)])
    return t


@nki.jit
def ragged_exp(x, width=128):
    """exp(x) tile by tile; the last tile is narrower (`min`), and a loop that runs past the
    end leaves with `break`: the loop is split, not unrolled."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for i in range(F // width + 2):
        start = i * width
        if start >= F:
            break
        w = min(width, F - start)
        t = load(x, start, w)
        nisa.activation(dst=t[:, 0:w], op=nl.exp, data=t[:, 0:w])
        nisa.dma_copy(dst=out[:, nl.ds(start, w)], src=t[:, 0:w])
    return out


@nki.jit
def running_sum(x, width=128):
    """Sum of the column blocks, accumulated in order; `i` keeps its last value."""
    P, F = x.shape
    acc = nl.ndarray((P, width), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in nl.static_range(F // width):
        t = load(x, i * width, width)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    out = nl.ndarray((P, width), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return emit([i]), out


@nki.jit
def stop_at(x, stop, width=128):
    """Blocks are negated in place up to block `stop`, where the loop breaks (`==` on the
    variable splits the loop around that iteration); the `else` does not run."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = load(x, 0, F)
    reached = 0
    for i in nl.range(F // width):
        if i == stop:
            break
        nisa.tensor_scalar(
            dst=t[:, nl.ds(i * width, width)],
            data=t[:, nl.ds(i * width, width)],
            op0=nl.multiply,
            operand0=-1.0,
        )
    else:
        reached = 1
    nisa.dma_copy(dst=out, src=t)
    return emit([reached]), out


@nki.jit
def last_tile_after(x, width=128):
    """A tile allocated per iteration and read after the loop: the last iteration's tile,
    which restarts specialisation with the loop unrolled."""
    P, F = x.shape
    for i in range(F // width):
        t = load(x, i * width, width)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    out = nl.ndarray((P, width), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def python_state(x, width=128):
    """Compile-time state built across iterations: a list, a counter, a scale that needs the
    variable as a number. Each of these loops unrolls."""
    P, F = x.shape
    n = F // width
    tiles = []
    for i in range(n):
        tiles.append(load(x, i * width, width))
    count = 0
    for i in range(n):
        count += 1
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for i in range(n):
        nisa.tensor_scalar(dst=tiles[i], data=tiles[i], op0=nl.multiply, operand0=float(i + 1))
        nisa.dma_copy(dst=out[:, nl.ds(i * width, width)], src=tiles[i])
    return emit([count, len(tiles)]), out


def doubled(n):
    for i in range(n):
        yield 2 * i


@nki.jit
def yields(x):
    """A generator's loop yields once per iteration: it unrolls."""
    return emit(list(doubled(4))), emit([sum(doubled(3))])


@nki.jit
def nested_ragged(x, rows=32, width=96):
    """Two nested range loops, both with a narrower last piece: x * 2 tile by tile."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for r in range((P + rows - 1) // rows):
        h = min(rows, P - r * rows)
        for c in range((F + width - 1) // width):
            w = min(width, F - c * width)
            t = nl.ndarray((rows, width), x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t[0:h, 0:w], src=x[nl.ds(r * rows, h), nl.ds(c * width, w)])
            nisa.tensor_scalar(dst=t[0:h, 0:w], data=t[0:h, 0:w], op0=nl.multiply, operand0=2.0)
            nisa.dma_copy(dst=out[nl.ds(r * rows, h), nl.ds(c * width, w)], src=t[0:h, 0:w])
    return out
