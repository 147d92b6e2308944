import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tt(a, b, op, odt, engine=None):
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=odt, buffer=nl.shared_hbm)
    ta = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray((P, F), dtype=b.dtype, buffer=nl.sbuf)
    to = nl.ndarray((P, F), dtype=odt, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    if engine is None:
        nisa.tensor_tensor(dst=to, data1=ta, data2=tb, op=getattr(nl, op))
    else:
        nisa.tensor_tensor(dst=to, data1=ta, data2=tb, op=getattr(nl, op), engine=engine)
    nisa.dma_copy(dst=out, src=to)
    return out
