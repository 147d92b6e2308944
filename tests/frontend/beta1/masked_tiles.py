"""Beta 1 `mask=` kernels written for the nkic tests: tail tiles of shapes that are not a
multiple of the tile size, column windows, and masks nkic reports."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def tail_rows(a, b):
    """out = tanh(a + 2 b), 128 rows at a time; the last tile keeps the rows below N."""
    N, M = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(M)[None, :]
    for i in nl.affine_range((N + 127) // 128):
        x = nl.load(a[i * 128 + i_p, i_f], mask=(i * 128 + i_p < N))
        y = nl.load(b[i * 128 + i_p, i_f], mask=(i * 128 + i_p < N))
        s = nl.add(x, y * 2.0, mask=(i * 128 + i_p < N))
        t = nisa.activation(nl.tanh, s, mask=(i * 128 + i_p < N))
        nl.store(out[i * 128 + i_p, i_f], value=t, mask=(i * 128 + i_p < N))
    return out


@nki.jit
def tail_both(a):
    """out = 3 a + 1 over 128 x 256 tiles; tail tiles in both dimensions (a 2-D mask)."""
    N, M = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:256]
    for i in nl.affine_range((N + 127) // 128):
        for j in nl.affine_range((M + 255) // 256):
            inside = (i * 128 + i_p < N) & (j * 256 + i_f < M)
            t = nl.load(a[i * 128 + i_p, j * 256 + i_f], mask=inside)
            y = nisa.tensor_scalar(t, np.multiply, 3.0, op1=np.add, operand1=1.0, mask=inside)
            nl.store(out[i * 128 + i_p, j * 256 + i_f], value=y, mask=inside)
    return out


@nki.jit
def window(a):
    """Columns 16..47 of a [128, 64] tensor, doubled; the other columns of out stay zero."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    z = nl.zeros((128, 64), dtype=a.dtype)
    nl.store(out[i_p, i_f], value=z)
    t = nl.load(a[i_p, i_f], mask=(i_f >= 16) & (48 > i_f))
    d = nl.multiply(t, 2.0, mask=(i_f >= 16) & (i_f < 48))
    nl.store(out[i_p, i_f], value=d, mask=(i_f >= 16) & (i_f < 48))
    return out


@nki.jit
def unmasked_tail(a):
    """The tail tile without a mask: reads past the end of `a`."""
    N, M = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(M)[None, :]
    for i in nl.static_range((N + 127) // 128):
        t = nl.load(a[i * 128 + i_p, i_f])
        nl.store(out[i * 128 + i_p, i_f], value=t, mask=(i * 128 + i_p < N))
    return out


@nki.jit
def equality_mask(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i_p, i_f], mask=(i_p == 3))
    nl.store(out[i_p, i_f], value=t)
    return out


@nki.jit
def tile_mask(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=t, mask=t)
    return out
