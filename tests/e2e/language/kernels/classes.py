"""Classes: nl.NKIObject subclasses and dataclasses (fields, synthesised __init__,
__post_init__, methods, staticmethod, classmethod, property, mutation, __call__) and enums."""

import nki
import nki.isa as nisa
import nki.language as nl
from common import emit
from config import Level, Op, Tiling


class Scale(nl.NKIObject):
    factor: float = 2.0
    bias: float = None
    calls: int = 0

    def __post_init__(self):
        if self.bias is None:
            self.bias = -self.factor

    def __call__(self, v):
        self.calls += 1
        return v * self.factor + self.bias

    @property
    def gain(self):
        return self.factor

    @gain.setter
    def gain(self, v):
        self.factor = v
        self.bias = -2 * v


def tensor_op(x, y, op):
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=op)
    nisa.dma_copy(dst=out, src=a)
    return out


@nki.jit
def classes(x, y, op=Op.MUL, cfg=None):
    if cfg is None:
        cfg = Tiling(4, scale=0.5)
    s = Scale()
    s3 = Scale(3.0, 1.0)
    sq = Tiling.square(8)
    before = cfg.elems
    cfg.widen(2)
    vals = [
        s.factor,
        s.bias,
        s(10),
        s3(10),
        s.calls + s3.calls,
        Scale(1.0) == Scale(1.0),
        Scale(1.0) != Scale(2.0),
        before,
        cfg.elems,
        cfg.tiles(512),
        len(cfg.label),
        Tiling.half(cfg.cols),
        sq.elems,
        sq == Tiling(8, 8),
        op.value == "mul",
        len(op.name),
        op == Op.MUL,
        op != Op.ADD,
        len(list(Op)),
        Level.HIGH == 5,  # IntEnum members equal their int values
        Level(1) != 1,
        Level.HIGH.value * 10 + Level["LOW"].value,
        s3.gain,
    ]
    s3.gain = 4.0  # a property setter
    vals += [s3.factor, s3(1)]
    return emit(vals), tensor_op(x, y, op.alu())


@nki.jit
def scaled(x, cfg, shape=(128, 64)):
    """`cfg` is a dataclass instance and `shape` a tuple, both passed from Python."""
    P, F = shape
    assert x.shape == shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.activation(dst=t, op=nl.copy, data=t, scale=cfg.scale * cfg.tiles(F))
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def epilogue(x, post):
    """`post` is an nl.NKIObject instance built in Python."""
    P, F = x.shape
    scale, shift = post.operands()
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=scale, op1=nl.add, operand1=shift)
    nisa.dma_copy(dst=out, src=t)
    return out
