"""Kernels that load SBUF tiles from their inputs and then touch the tiles other than by
reading them whole: a partial overwrite, an overlapping second load, a read of a part."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def load_then_zero_a_corner(x):
    """x: [128, F]. Returns x with rows 0..63, columns 0..7 set to 0 in SBUF before the store."""
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=x)
    nisa.memset(dst=t[0:64, 0:8], value=0.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def overlapping_loads(x, y):
    """x, y: [128, F]. y is loaded over the second half of x's columns and beyond; returns the
    tile's first F + F/2 columns: x[:, :F/2] then y."""
    P, F = x.shape
    H = F // 2
    t = nl.ndarray((P, F + H), dtype=x.dtype, buffer=nl.sbuf)
    out = nl.ndarray((P, F + H), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t[:, 0:F], src=x)
    nisa.dma_copy(dst=t[:, H : H + F], src=y)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def reload_and_read_part(x, y):
    """x, y: [128, F]. Loads x, then y into the same tile, and stores rows 64..127 of the tile
    scaled by 2 (a read of a part of the tile, by the vector engine)."""
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray((64, F), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((64, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=t, src=y)
    nisa.tensor_scalar(dst=s, data=t[64:128, :], op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=s)
    return out
