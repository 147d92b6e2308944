"""The nkic frontend: parse a kernel file with `ast` and specialise one kernel into tile IR."""

from .args import ArgExpr, TensorSpec, parse_arg_spec
from .entry import find_kernels, specialise

__all__ = ["ArgExpr", "TensorSpec", "find_kernels", "parse_arg_spec", "specialise"]
