"""Tensor creation (nl.ndarray / zeros / ones / full / *_like), dtypes, buffers, tile sizes."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def creation(x):
    assert nl.tile_size.pmax == 128 and nl.tile_size.psum_bank_fmax == 512
    assert nl.tile_size.gemm_stationary_fmax == 128 and nl.tile_size.gemm_moving_fmax == 512
    assert nl.tile_size.psum_bank_fmax == 512
    assert nl.program_id(0) == 0 and nl.num_programs() == 1
    assert nl.is_on_chip(nl.sbuf) and nl.is_hbm(nl.shared_hbm) and not nl.is_psum(nl.sbuf)
    a = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf, name="a_tile")
    b = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
    z = nl.zeros((128, 32), dtype=nl.int32)
    o = nl.ones((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    f = nl.full((128, 32), 7, dtype=nl.float32)
    zl = nl.zeros_like(x[0:128, 0:32], buffer=nl.sbuf)
    el = nl.empty_like(a, dtype=nl.float32)
    assert zl.shape == (128, 32) and zl.buffer == nl.sbuf and el.dtype == nl.float32
    out = nl.ndarray(x.shape, x.dtype, nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
