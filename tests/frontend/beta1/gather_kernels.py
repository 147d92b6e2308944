"""Beta 1 kernels written for the nkic tests: value-returning GpSimd / Vector instructions."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gather_rows(src, index, per):
    """nisa.local_gather of every index, `per` elements each; the tile it returns stored
    whole."""
    P, K = index.shape
    out = nl.ndarray((P, K, 16, per), dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.load(src)
    i = nl.load(index)
    g = nisa.local_gather(s, i, per)
    nl.store(out, value=g)
    return out


@nki.jit
def replace_top8_in_half(a):
    """The 8 largest values of each row's first half replaced by 0 (`nc_match_replace8` under a
    mask on its data; the 8 values and their indices are per-partition vectors the mask does not
    restrict); the result is a tile of the whole grid, of which the mask's half is written and
    stored: out holds the first half, idx the indices."""
    n, m = a.shape
    out = nl.ndarray((n, m // 2), dtype=a.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((n, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    idx_tile = nisa.memset(shape=(n, 8), value=0, dtype=nl.uint32)
    ix, iy = nl.mgrid[0:n, 0:m]
    t = nl.load(a)
    top = nisa.max8(src=t[ix, iy], mask=(iy < m // 2))
    replaced = nisa.nc_match_replace8(
        dst_idx=idx_tile[:, :], data=t[ix, iy], vals=top, imm=0.0, mask=(iy < m // 2)
    )
    nl.store(out[ix, iy], value=replaced, mask=(iy < m // 2))
    nl.store(idx, value=idx_tile)
    return out, idx
