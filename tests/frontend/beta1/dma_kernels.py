"""Beta 1 kernels written for the nkic tests: DMA forms of Beta 1 (float32
nl.load_transpose2d, dma_copy with dst_rmw_op, indirect dma_transpose)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def transpose_f32(a):
    """a (F, P) float32 loaded transposed into a (P, F) tile."""
    F, P = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(a)
    nl.store(out, value=t)
    return out


@nki.jit
def diagonal_by_identity(a):
    """a (128, 128) float32 times the loaded shared identity (a bfloat16 HBM constant in Beta
    1, loaded as float32), elementwise: the diagonal of a."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    identity = nl.shared_identity_matrix(n=128, dtype=nl.bfloat16)
    eye = nl.load(identity, dtype=a.dtype)
    t = nl.load(a)
    nl.store(out, value=nl.multiply(t, eye))
    return out


@nki.jit
def identity_values(n):
    """The shared identity of size n, as int32."""
    out = nl.ndarray((n, n), dtype=nl.int32, buffer=nl.shared_hbm)
    eye = nl.load(nl.shared_identity_matrix(n, dtype=nl.int32))
    nl.store(out, value=eye)
    return out


@nki.jit
def scatter_add(base, src, rows):
    """out = base, then every row p of src added onto row rows[p] of out (rows may repeat)."""
    n, m = src.shape
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(base))
    idx = nl.load(rows)
    iy = nl.arange(m)[None, :]
    nisa.dma_copy(dst=out[idx, iy], src=nl.load(src), dst_rmw_op=np.add)
    return out


@nki.jit
def gather_transpose(src, rows):
    """The rows of src (N, B, F) that `rows` (R, 1) names, gathered and transposed into a
    (F, B, R) tile: an indirect DMA transpose."""
    _, B, F = src.shape
    R = rows.shape[0]
    out = nl.ndarray((F, B, R), dtype=src.dtype, buffer=nl.shared_hbm)
    idx = nl.load(rows)
    i_p = nl.arange(R)[:, None]
    iy = nl.arange(B)[None, :, None]
    iz = nl.arange(F)[None, None, :]
    nl.store(out, value=nisa.dma_transpose(src[idx[i_p, 0], iy, iz], axes=(2, 1, 0)))
    return out
