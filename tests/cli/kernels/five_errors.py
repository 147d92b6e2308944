import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def five_errors(a):
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a, bogus=1)
    u = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=u, data1=t, data2=undefined_tile, op=nl.add)
    w = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.activation(dst=w, op=nl.exp, data=t)
    x = nl.ndarray((P, F + 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=x, src=w)
    y = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=w, op0=nl.multiplyy, operand0=2.0)
    m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=w, axis=(0,))
    nisa.dma_copy(dst=out, src=w)
    return out
