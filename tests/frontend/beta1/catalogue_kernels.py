"""Beta 1 kernels written for the nkic tests of the catalogue's index and tile rules."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def block_operand(a):
    out = nl.ndarray((2, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    nl.store(out[0], value=nisa.activation(op=nl.exp, data=t))
    return out


@nki.jit
def block_operator(a):
    out = nl.ndarray((2, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    nl.store(out[0], value=t * 2.0)
    return out


@nki.jit
def block_tiles(a):
    """out[i] = a[i] + 1 through a tensor with a block dimension, one block at a time."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        t[i] = nl.load(a[i])
        nl.store(out[i], value=nl.add(t[i], 1.0))
    return out


@nki.jit
def arange_1d_sum(a):
    out = nl.ndarray((64, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.arange(64)
    t = nl.load(a[2 * i + 1, 0])
    nl.store(out, value=t)
    return out


@nki.jit
def rows_by_index(a, idx):
    """out[p, :] = a[idx[p], :]: runtime indices on the partition dimension."""
    out = nl.ndarray((64, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(64)[:, None]
    i_f = nl.arange(a.shape[1])[None, :]
    rows = nl.load(idx[i_p, 0])
    nl.store(out, value=nl.load(a[rows[i_p, 0], i_f]))
    return out


@nki.jit
def columns_by_index(a, idx):
    out = nl.ndarray((64, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(64)[:, None]
    cols = nl.load(idx[i_p, 0])
    nl.store(out, value=nl.load(a[i_p, cols[i_p, 0]]))
    return out


@nki.jit
def assign_to_grid_sum(a):
    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:8]
    offsets = i_p * 8 + i_f
    offsets[0, 0] = 3
    return out


@nki.jit
def assign_to_mask(a):
    out = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:8]
    keep = i_p < 64
    keep[0, 0] = 1
    return out
