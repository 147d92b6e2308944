import nki
import nki.isa as nisa
import nki.language as nl

from ..config import Act, BlockConfig
from ..ops import *  # noqa: F403
from ..ops.tiles import PARTITIONS


@nki.jit
def block_act(x, cfg=BlockConfig(), act=Act.EXP):  # noqa: B008
    """act(x * cfg.scale) per block; `cfg.act` overrides `act` unless it is COPY."""
    P, F = x.shape
    assert P <= PARTITIONS
    op = activation_of(cfg.act if cfg.act != Act.COPY else act)  # noqa: F405
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(cfg.blocks(F)):
        t = load_block(x, j, cfg)  # noqa: F405
        nisa.activation(dst=t, op=op, data=t, scale=cfg.scale)
        store_block(out, j, t, cfg)  # noqa: F405
    return out
