from .tiles import load_tile, store_tile

__all__ = ["load_tile", "store_tile", "apply"]


def apply(dst, src, act):
    import nki.isa as nisa
    import nki.language as nl

    from ..config import Activation

    op = nl.exp if act == Activation.EXP else nl.copy
    nisa.activation(dst=dst, op=op, data=src)
