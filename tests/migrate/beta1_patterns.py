"""Beta 1 kernels whose index grids no slice can replace: each becomes an access pattern, an
`iota` / `affine_select` pattern or an indirect DMA with a vector offset in current NKI."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def swap_blocks(a, blocks):
    """Each row of `a` holds a (blocks[0], blocks[1]) matrix; the rows of the result hold it
    transposed."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, _ = a.shape
    n1, n2 = blocks
    t = nl.load(a)
    i_p = nl.arange(rows)[:, None, None]
    i_1 = nl.arange(n1)[None, :, None]
    i_2 = nl.arange(n2)[None, None, :]
    u = nl.ndarray((rows, n1 * n2), dtype=a.dtype)
    u[i_p, i_2 * n1 + i_1] = nl.copy(t[i_p, i_1 * n2 + i_2])
    nl.store(out, value=u)
    return out


@nki.jit
def pool_sums(a, k):
    """Sums of the k x k windows of each (h, w) plane of `a` (c, h, w)."""
    c, h, w = a.shape
    out = nl.ndarray((c, h // k, w // k), dtype=a.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:c, 0 : h // k, 0:k, 0 : w // k, 0:k]
    t = nl.load(a)
    s = nl.sum(t[i0, k * i1 + i2, k * i3 + i4], axis=[2, 4])
    nl.store(out, value=s)
    return out


@nki.jit
def ramps():
    """Integer ramps made by iota: across the free axis, down the partitions, both."""
    out_a = nl.ndarray((1, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    out_b = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    out_c = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    i_f = nl.arange(256)[None, :]
    i_p = nl.arange(128)[:, None]
    down = i_f * -2 + 7
    a = nisa.iota(down, dtype=nl.int32)
    b = nisa.iota(3 * i_p + 1, dtype=nl.int32)
    j_p, j_f = nl.mgrid[0:64, 0:32]
    c = nisa.iota(j_p * 32 + j_f - 100, dtype=nl.float32)
    nl.store(out_a, value=a)
    nl.store(out_b, value=b)
    nl.store(out_c, value=c)
    return out_a, out_b, out_c


@nki.jit
def lower_triangle(a):
    """`a` (128, 128) with the elements above the diagonal replaced by -1."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    t = nl.load(a[i_p, i_f])
    low = nisa.affine_select(pred=(i_f <= i_p), on_true_tile=t, on_false_value=-1.0)
    nl.store(out[i_p, i_f], value=low)
    return out


@nki.jit
def gather_rows(data, idx):
    """Rows idx[0], idx[1], ... of `data`, gathered by an indirect DMA."""
    n = idx.shape[0]
    out = nl.ndarray((n, data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(n)[:, None]
    i_f = nl.arange(data.shape[1])[None, :]
    rows = nl.load(idx[i_p])
    t = nl.load(data[rows[i_p, 0], i_f])
    nl.store(out, value=t)
    return out


@nki.jit
def even_rows(data):
    """Rows 0, 2, 4, ... of `data` (128, 256), gathered through indices made by iota."""
    out = nl.ndarray((64, 256), dtype=data.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(256)[None, :]
    idx = nisa.iota(2 * nl.arange(64)[:, None], dtype=np.int32)
    t = nl.load(data[idx, i_f])
    nl.store(out, value=t)
    return out
