import nki.isa as nisa
import nki.language as nl

from .. import PARTITIONS
from ..config import Act, BlockConfig

print("evaluating pkg.ops.tiles")

__all__ = ["load_block", "store_block"]


def activation_of(act: Act):
    table = {"COPY": nl.copy, "EXP": nl.exp, "RELU": nl.relu}
    return table[act.name]


def load_block(x, j, cfg: BlockConfig):
    P = x.shape[0]
    assert P <= PARTITIONS
    t = nl.ndarray((P, cfg.width), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[:, nl.ds(j * cfg.width, cfg.width)])
    return t


def store_block(out, j, t, cfg: BlockConfig):
    nisa.dma_copy(dst=out[:, nl.ds(j * cfg.width, cfg.width)], src=t)


def unused_helper():
    return nl.ndarray((1, 1), nl.float32)
