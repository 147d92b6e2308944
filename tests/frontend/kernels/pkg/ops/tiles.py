import nki.isa as nisa
import nki.language as nl

from .. import PACKAGE_TILE
from ..config import TileConfig


def load_tile(src, cfg: TileConfig):
    assert cfg.rows <= PACKAGE_TILE
    t = nl.ndarray((cfg.rows, cfg.cols), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def store_tile(dst, t):
    nisa.dma_copy(dst=dst, src=t)
