"""Beta 1 kernels written for the nkic tests: index grids whose axes are transposed, repeated
or skipped, and grids of more axes than an access pattern has dimensions."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def load_transposed(a):
    """`a` (F, P) read into a (P, F) tile through a transposed grid: the transpose of `a`."""
    F, P = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(F)[None, :]
    t = nl.load(a[i_f, i_p])
    nl.store(out[i_p, i_f], value=t)
    return out


@nki.jit
def diagonals(a):
    """a (P, N, N): each partition's diagonal, one grid axis indexing two dimensions."""
    P, N, _ = a.shape
    out = nl.ndarray((P, N), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_j = nl.mgrid[0:P, 0:N]
    t = nl.load(a[i_p, i_j, i_j])
    nl.store(out[i_p, i_j], value=t)
    return out


@nki.jit
def outer_sum(a, b):
    """out[p, 2 * w + x] = a[p, w] + b[p, x]: each source index leaves one axis of the grid
    unused, so each read is broadcast along it."""
    P, W = a.shape
    out = nl.ndarray((P, 2 * W), dtype=a.dtype, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    i_p, i_x, i_w = nl.mgrid[0:P, 0:2, 0:W]
    wide = nl.ndarray((P, 2 * W), dtype=a.dtype)
    wide[i_p, 2 * i_w + i_x] = nl.add(ta[i_p, i_w], tb[i_p, i_x])
    nl.store(out, value=wide)
    return out


@nki.jit
def reverse_axes(a, d1, d2, d3, d4, d5):
    """Each partition's vector read as a d1 x ... x d5 array and written with its axes in
    reverse order, doubled: five free grid axes, more than one instruction walks."""
    P = a.shape[0]
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    p, i1, i2, i3, i4, i5 = nl.mgrid[0:P, 0:d1, 0:d2, 0:d3, 0:d4, 0:d5]
    src = (((i1 * d2 + i2) * d3 + i3) * d4 + i4) * d5 + i5
    dst = (((i5 * d4 + i4) * d3 + i3) * d2 + i2) * d1 + i1
    moved = nl.ndarray(a.shape, dtype=a.dtype)
    moved[p, dst] = nl.multiply(t[p, src], 2.0)
    nl.store(out, value=moved)
    return out


@nki.jit
def trilinear_corners(a):
    """The eight corners of each partition's (D, H, W) cube, through a grid whose axes index
    the dimensions in reverse order (`t[i_p, w_axis, h_axis, d_axis]`)."""
    P, D, H, W = a.shape
    out = nl.ndarray((P, 2, 2, 2), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p, i_w, i_h, i_d = nl.mgrid[0:P, 0:2, 0:2, 0:2]
    corners = nl.ndarray((P, 2, 2, 2), dtype=a.dtype)
    corners[i_p, i_d, i_h, i_w] = nl.copy(t[i_p, (D - 1) * i_d, (H - 1) * i_h, (W - 1) * i_w])
    nl.store(out, value=corners)
    return out


@nki.jit
def partition_from_free(a):
    """An SBUF tile indexed with its partition dimension on a free grid axis: no engine reads
    it that way."""
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    t = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=t[i_f, i_p])
    return out


@nki.jit
def row_windows(a, k):
    """out[h, j, w] = a[h + j, w] for the N - k + 1 windows of k rows, 128 windows a tile; the
    tail tile's load is masked, its row index a sum of two grid axes."""
    N, W = a.shape
    n_out = N - (k - 1)
    out = nl.ndarray((n_out, k, W), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((n_out + 127) // 128):
        i_h, i_k, i_w = nl.mgrid[0:128, 0:k, 0:W]
        i_h = t * 128 + i_h
        win = nl.load(a[i_h + i_k, i_w], mask=(i_h < n_out))
        nl.store(out[i_h, i_k, i_w], value=win, mask=(i_h < n_out))
    return out
