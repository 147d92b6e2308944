"""Beta 1 `mask=` kernels written for the nkic tests: a masked call that returns a tile returns
one of the whole index grid's shape, written where the mask holds."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def grid_shaped_result(a):
    """A masked load returns a tile of the whole grid's shape ([128, 64]); out has that shape
    and holds the rows the mask keeps."""
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i_p, i_f], mask=(i_p < 100))
    out = nl.ndarray(t.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[i_p, i_f], value=t, mask=(i_p < 100))
    return out


@nki.jit
def unwritten_rows_stored(a):
    """Stores the whole tile of which a masked load wrote 100 rows."""
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i_p, i_f], mask=(i_p < 100))
    nl.store(out[i_p, i_f], value=t)
    return out


@nki.jit
def window_max(a):
    """out[r, c] = max(a[r, c], a[r, c + 1], a[r + 1, c], a[r + 1, c + 1]) over 128-row
    tiles; each tile loads the rows it has (mask) and reduces one row more than the load
    wrote on the last tile (the stored rows never use it)."""
    N, M = a.shape
    out = nl.ndarray((N - 1, M - 1), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((N + 126) // 127):
        i_h, i_k, i_w = nl.mgrid[0:128, 0:2, 0:M]
        t = nl.load(a[i * 127 + i_h + i_k, i_w], mask=(i * 127 + i_h < N - 1))
        i_h, i_k, i_w, i_j = nl.mgrid[0:128, 0:2, 0 : M - 1, 0:2]
        m = nl.max(t[i_h, i_k, i_w + i_j], axis=[1, 3], mask=(i * 127 + i_h < N))
        i_o, i_c = nl.mgrid[0:128, 0 : M - 1]
        nl.store(out[i * 127 + i_o, i_c], value=m, mask=(i * 127 + i_o < N - 1) & (i_o < 127))
    return out


@nki.jit
def assign_masked(a):
    """t starts at zero; `t[...] = nl.exp(x, mask=...)` writes the first 32 columns of t and
    leaves the others as they were."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.zeros((128, 64), dtype=a.dtype)
    x = nl.load(a)
    t[i_p, i_f] = nl.exp(x, mask=(i_f < 32))
    nl.store(out, value=t)
    return out
