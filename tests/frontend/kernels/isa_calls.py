"""nki.isa calls bound by the catalogue: positional and keyword arguments, defaults, enum,
ALU-op, activation and dtype attributes, immediates and tensor operands."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def isa_calls(x):
    P, F = x.shape
    a = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    col = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    ps = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
    nisa.dma_copy(a, x, dge_mode=nisa.dge_mode.hwdge)
    nisa.tensor_tensor(b, a, a, nl.add)
    nisa.tensor_tensor(dst=b, data1=a, data2=b, op=nl.maximum, engine=nisa.engine.gpsimd)
    nisa.tensor_scalar(dst=b, data=a, op0=nl.multiply, operand0=2, op1=nl.add, operand1=col)
    nisa.activation(dst=b, op=nl.exp, data=a, bias=col, scale=0.5)
    nisa.tensor_reduce(dst=col, op=nl.add, data=a, axis=1, keepdims=True)
    nisa.tensor_copy(dst=a, src=b, engine=nisa.vector_engine)
    nisa.nc_matmul(ps[:, 0:128], a[:, 0:128], b[:, 0:128], accumulate=True)
    nisa.iota(dst=col, pattern=[[0, 1]], offset=3, channel_multiplier=1)
    nisa.dma_compute(dst=a, srcs=[a, b], reduce_op=nl.add)
    nisa.activation(
        dst=b,
        op=nl.copy,
        data=a,
        reduce_op=nl.add,
        reduce_res=col,
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    assert nisa.get_nc_version() == nisa.nc_version.gen3
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=b)
    return out
