"""Instruction sequences sharing the engines' accumulator registers."""

import nki
import nki.isa as nisa
import nki.language as nl


def _load(x, buf=nl.sbuf):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _load_pair(x, y):
    """x and y in one tile, so both sit on the same partitions (the same accumulator lanes)."""
    P, F = x.shape
    t = nl.ndarray((P, 2, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0, :], src=x)
    nisa.dma_copy(dst=t[:, 1, :], src=y)
    return t[:, 0, :], t[:, 1, :]


def _store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def activation_sequence(x, y, cmds=("reset_reduce", "reduce"), op="exp"):
    """Two activations into the ScalarE accumulators; the second reads them out."""
    P, F = x.shape
    tx, ty = _load_pair(x, y)
    d0 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(
        dst=d0, op=getattr(nl, op), data=tx, reduce_op=nl.add,
        reduce_cmd=getattr(nisa.reduce_cmd, cmds[0]),
    )
    nisa.activation(
        dst=d1, op=getattr(nl, op), data=ty, reduce_op=nl.add, reduce_res=res,
        reduce_cmd=getattr(nisa.reduce_cmd, cmds[1]),
    )
    return _store(d1), _store(res)


@nki.jit
def cumulative_sequence(x, y, cmd="reduce"):
    """tensor_scalar_cumulative continuing from the Vector accumulators of a previous one."""
    P, F = x.shape
    tx, ty = _load_pair(x, y)
    d0 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=d0, src=tx, op0=nl.add, op1=nl.add, imm0=0.0)
    nisa.tensor_scalar_cumulative(
        dst=d1, src=ty, op0=nl.add, op1=nl.add, imm0=0.0, reduce_cmd=getattr(nisa.reduce_cmd, cmd)
    )
    return _store(d0), _store(d1)


@nki.jit
def exponential_sequence(x, y):
    """trn3 VectorE exp with a running sum over two instructions (reset_reduce, reduce)."""
    P, F = x.shape
    tx, ty = _load_pair(x, y)
    d0 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=d0, src=tx, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.exponential(dst=d1, src=ty, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=res)
    return _store(res)


@nki.jit
def activation_lanes(x):
    """reset_reduce on partitions 32..32+P of a tile, then reduce on partitions 0..P."""
    P, F = x.shape
    t = nl.ndarray((32 + P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[32 : 32 + P], src=x)
    nisa.dma_copy(dst=t[0:P], src=x)
    d = nl.ndarray((32 + P, F), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(
        dst=d[32 : 32 + P], op=nl.copy, data=t[32 : 32 + P], reduce_op=nl.add,
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    nisa.activation(
        dst=d[0:P], op=nl.copy, data=t[0:P], reduce_op=nl.add, reduce_res=res,
        reduce_cmd=nisa.reduce_cmd.reduce,
    )
    return _store(res)


@nki.jit
def reduce_kept_in_the_accumulator(x, y):
    """tensor_scalar_reduce without reduce_res (NKI 0.6) leaves sum(x) in the VectorE
    accumulators; exponential(reduce_cmd=reduce) adds sum(exp(y)) and reads it out."""
    P, F = x.shape
    tx, ty = _load_pair(x, y)
    d0 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    d1 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(
        dst=d0, data=tx, op0=nl.multiply, operand0=1.0, reduce_op=nl.add, reduce_res=None
    )
    nisa.exponential(dst=d1, src=ty, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=res)
    return _store(res)
