import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def square_op(a, op, dt):
    out = nl.ndarray(a.shape, dtype=dt, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=dt, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=u, data1=t, data2=t, op=op)
    nisa.dma_copy(dst=out, src=u)
    return out
