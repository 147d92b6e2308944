"""Kernels whose meaning or legality depends on the NKI version or the target."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rsqrt_of(a, buf="sbuf"):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    if buf == "psum":
        p = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=t)
        t = p
    r = nl.rsqrt(t)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def e8m0_copy(a):
    t = nl.ndarray(a.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out


@nki.jit
def prelu_activation(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.activation(dst=t, op=nl.prelu, data=t)
    return a


@nki.jit
def abs_max_reduce(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=t, data=t, op0=nl.abs_max, operand0=0.5, reduce_op=nl.add,
                              reduce_res=r)
    out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def transpose_padded(a):
    """A 2-D transpose into a destination with an extra size-1 dimension."""
    M, K = a.shape
    src = nl.ndarray((M, K), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=a)
    t = nl.ndarray((K, 1, M), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=src)
    out = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t.reshape((K, M)))
    return out


@nki.jit
def transpose_hwdge(a):
    shape = tuple(reversed(a.shape))
    t = nl.ndarray(shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=a, dge_mode=nisa.dge_mode.hwdge)
    out = nl.ndarray(shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def dma_compute_skip(a, b):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_compute(dst=t, srcs=[a, b], reduce_op=nl.add, oob_mode=nisa.oob_mode.skip)
    return a


@nki.jit
def bypass_activation(a, scale=2.0):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.activation(dst=r, op=nl.bypass, data=t, scale=scale)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out
