"""Kernels that return a view of the tensor they wrote: a reshape, a slice, a permutation."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_max(x):
    """x: [B, S, V]; the maximum over V, computed as [B*S, 1] and returned as [B, S, 1]."""
    B, S, V = x.shape
    out = nl.ndarray((1, B * S), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((B * S, V), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.reshape((B * S, V)))
    m = nl.ndarray((B * S, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    nisa.dma_copy(dst=out.reshape((B * S, 1)), src=m)
    return out.reshape((B, S, 1))


@nki.jit
def doubled_parts(x):
    """x: [R, C]; 2x in a [R + 1, C] buffer, returned as rows 1.. and transposed."""
    R, C = x.shape
    buf = nl.ndarray((R + 1, C), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((R, C), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.add)
    nisa.dma_copy(dst=buf[1 : R + 1, :], src=t)
    nisa.dma_copy(dst=buf[0:1, :], src=t[0:1, :])
    return buf[1 : R + 1, :], buf.permute((1, 0))
