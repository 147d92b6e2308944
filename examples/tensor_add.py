"""Element-wise add of two [128, 512] tensors: one tile, one instruction per step."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tensor_add(a, b):
    P, F = a.shape
    assert P <= nl.tile_size.pmax, "one tile: at most 128 rows"
    c = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)

    a_tile = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    b_tile = nl.ndarray((P, F), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_tile, src=a)
    nisa.dma_copy(dst=b_tile, src=b)

    c_tile = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
    nisa.dma_copy(dst=c, src=c_tile)
    return c
