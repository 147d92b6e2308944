"""Loops: nl.affine_range / nl.sequential_range kept symbolic when they can be, unrolled when
the body needs the induction variable as a number; both must compute the same thing."""

import nki
import nki.isa as nisa
import nki.language as nl
from common import emit


def block(x, i, width):
    t = nl.ndarray((x.shape[0], width), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, nl.ds(i * width, width)])
    return t


@nki.jit
def accumulate(x, width=128):
    """Sum of the column blocks of x, accumulated in one tile by a sequential loop."""
    P, F = x.shape
    acc = nl.ndarray((P, width), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in nl.sequential_range(F // width):
        t = block(x, i, width)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
        last = i
    out = nl.ndarray((P, width), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return emit([last]), out


@nki.jit
def listed(x, width=128):
    """A list of tiles built in a loop (forces unrolling), then summed."""
    P, F = x.shape
    tiles = []
    for i in nl.affine_range(F // width):
        tiles.append(block(x, i, width))
    total = tiles[0]
    for t in tiles[1:]:
        nisa.tensor_tensor(dst=total, data1=total, data2=t, op=nl.add)
    out = nl.ndarray((P, width), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=total)
    return out


@nki.jit
def first_differs(x, width=128):
    """Block i is scaled by i + 1, except block 0 which is negated: the branch on the induction
    variable forces the loop to unroll."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    count = 0
    for i in nl.affine_range(F // width):
        t = block(x, i, width)
        if i == 0:
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
        else:
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(i + 1))
        count += 1
        nisa.dma_copy(dst=out[:, nl.ds(i * width, width)], src=t)
    return emit([count]), out


@nki.jit
def matmul(lhsT, rhs):
    """lhsT.T @ rhs with nested affine loops and a PSUM accumulation over K."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, 256
    result = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[nl.ds(k * TK, TK), nl.ds(m * TM, TM)])
                nisa.dma_copy(dst=b, src=rhs[nl.ds(k * TK, TK), nl.ds(n * TN, TN)])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            o = nl.ndarray((TM, TN), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=o, src=acc)
            nisa.dma_copy(dst=result[nl.ds(m * TM, TM), nl.ds(n * TN, TN)], src=o)
    return result


@nki.jit
def ragged(x, width=100):
    """Blocks of `width` columns, the last one shorter: min() bounds the slice, unrolling."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((F + width - 1) // width):
        lo = i * width
        hi = min(F, lo + width)
        t = nl.ndarray((P, width), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, 0 : hi - lo], src=x[:, lo:hi])
        nisa.activation(dst=t[:, 0 : hi - lo], op=nl.exp, data=t[:, 0 : hi - lo])
        nisa.dma_copy(dst=out[:, lo:hi], src=t[:, 0 : hi - lo])
    return out


@nki.jit
def negative_indices(h, shift=1):
    """Python wrap-around of negative indices that depend on the loop variable: h[-1 - b] is
    negative in every iteration (stays symbolic); h[b - shift] changes sign (unrolls)."""
    B, P, F = h.shape
    out = nl.ndarray((P, 2 * B * F), h.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        t = nl.ndarray((P, F), h.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=h[-1 - b, :, -F:])
        nisa.dma_copy(dst=out[:, nl.ds(b * F, F)], src=t)
    for b in nl.affine_range(B):
        t = nl.ndarray((P, F), h.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=h[b - shift])
        nisa.dma_copy(dst=out[:, nl.ds((B + b) * F, F)], src=t)
    return out


@nki.jit
def reversed_blocks(x, width=32):
    """Column blocks in reverse order: the store offset decreases with the loop variable."""
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(F // width):
        t = nl.ndarray((P, width), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, b * width : (b + 1) * width])
        nisa.dma_copy(dst=out[:, F - (b + 1) * width : F - b * width], src=t)
    return out
