"""Doubles every 128-column tile through a helper function, so each instruction has a call site."""

import nki
import nki.isa as nisa
import nki.language as nl


def double_tile(src, dst):
    t = nl.ndarray((128, 128), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    y = nl.ndarray((128, 128), dtype=src.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=dst, src=y)


@nki.jit
def doubled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for col in nl.affine_range(x.shape[1] // 128):
        double_tile(x[:, col * 128 : (col + 1) * 128], out[:, col * 128 : (col + 1) * 128])
    return out
