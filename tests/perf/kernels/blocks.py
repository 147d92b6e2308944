"""exp of row blocks in straight-line code (static_range): each block's tiles are dead once
its store is issued, so an allocator may reuse their bytes for the next block's tiles, which
then wait for the store to finish. `HAND` pins every tile to bytes of its own with address=."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def exp_blocks(x, HAND):
    N, D = x.shape
    out = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    row = D * 4
    for b in nl.static_range(N // 128):
        if HAND:
            t = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf, address=(0, 2 * b * row))
            u = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf, address=(0, (2 * b + 1) * row))
        else:
            t = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
            u = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[b * 128 : (b + 1) * 128, :])
        nisa.activation(dst=u, op=nl.exp, data=t)
        nisa.dma_copy(dst=out[b * 128 : (b + 1) * 128, :], src=u)
    return out
