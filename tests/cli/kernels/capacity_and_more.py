"""Kernels whose SBUF does not fit *and* that have another error: `nkic check` reports both."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def with_frontend_error(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=big, value=0.0)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, 0:1024])
    nisa.dma_copy(dst=out, src=big[:, 0:512])
    return out


@nki.jit
def with_race(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        nisa.memset(dst=big[:, 0:512], value=1.0)
    nisa.dma_copy(dst=out, src=big[:, 0:512])
    return out


@nki.jit
def with_wide_tile(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    wide = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=wide, value=0.0)
    big = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=big, value=0.0)
    nisa.dma_copy(dst=out, src=big[:, 0:512])
    return out
