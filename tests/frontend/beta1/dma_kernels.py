"""Beta 1 kernels written for the nkic tests: DMA forms of Beta 1 (float32
nl.load_transpose2d, dma_copy with dst_rmw_op, indirect dma_transpose)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def transpose_f32(a):
    """a (F, P) float32 loaded transposed into a (P, F) tile."""
    F, P = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(a)
    nl.store(out, value=t)
    return out
