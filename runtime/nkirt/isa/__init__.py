"""Bit-faithful semantics of every NKI 0.3.0 instruction, looked up by name in `SEMANTICS`."""

from nkirt.isa import (  # noqa: F401  (importing a family registers its instructions)
    activation,
    data_movement,
    elementwise,
    gpsimd,
    mx,
    random,
    reductions,
    registers,
    search,
    tensor_engine,
)
from nkirt.isa.registry import SEMANTICS, Semantics, semantics

__all__ = ["SEMANTICS", "Semantics", "semantics"]
