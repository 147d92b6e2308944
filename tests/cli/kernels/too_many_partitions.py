import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def big(a):
    out = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out
