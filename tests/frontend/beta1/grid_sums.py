"""A Beta 1 kernel written for the nkic tests: index grids of several axes summed into the
index of one tensor dimension."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def regroup(a, rows, cols):
    """Each partition's [rows * cols] vector read as a rows x cols matrix and written back
    column by column."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p = nl.arange(a.shape[0])[:, None, None]
    i_r = nl.arange(rows)[None, :, None]
    i_c = nl.arange(cols)[None, None, :]
    moved = nl.ndarray((a.shape[0], rows * cols), dtype=a.dtype)
    moved[i_p, i_c * rows + i_r] = nl.copy(t[i_p, i_r * cols + i_c])
    nl.store(out, value=moved)
    return out


@nki.jit
def block_max(a, k):
    """The maximum of every k x k block of each partition's [H, W] plane."""
    C, H, W = a.shape
    out = nl.ndarray((C, H // k, W // k), dtype=a.dtype, buffer=nl.shared_hbm)
    c, h, dh, w, dw = nl.mgrid[0:C, 0 : H // k, 0:k, 0 : W // k, 0:k]
    t = nl.load(a)
    m = nl.max(t[c, k * h + dh, k * w + dw], axis=[2, 4])
    nl.store(out, value=m)
    return out


@nki.jit
def first_row(a):
    """Row 0 of `a`, through an int and a grid in one index."""
    out = nl.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(a.shape[1])[None, :]
    t = nl.load(a[0, i_f])
    nl.store(out[0, i_f], value=t)
    return out
