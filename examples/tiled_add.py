"""Element-wise add of two [N, F] tensors, tiled over rows in 128-partition tiles."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tiled_add(a, b):
    N, F = a.shape
    TILE = nl.tile_size.pmax
    assert N % TILE == 0, "rows must be a multiple of 128"
    c = nl.ndarray((N, F), dtype=a.dtype, buffer=nl.shared_hbm)

    for i in range(N // TILE):
        rows = slice(i * TILE, (i + 1) * TILE)
        a_tile = nl.ndarray((TILE, F), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((TILE, F), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rows, :])
        nisa.dma_copy(dst=b_tile, src=b[rows, :])

        c_tile = nl.ndarray((TILE, F), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=c[rows, :], src=c_tile)
    return c
