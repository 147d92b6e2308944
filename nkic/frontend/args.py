"""Kernel arguments from outside the kernel: `TensorSpec` and the CLI `--arg NAME=SPEC` syntax."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

from ..ir.types import DTYPES

#: Spellings accepted for dtypes besides the `nl` names (numpy / ml_dtypes names).
_DTYPE_ALIASES = {"bool_": "bool", "float8_e4m3fnuz": None, "float8_e5m2fnuz": None}


def normalise_dtype(dtype: object) -> str:
    """The `nl` dtype name of `dtype`: an `nl` name, a numpy dtype / scalar type or an
    ml_dtypes type. Raises ValueError for anything else."""
    name = dtype if isinstance(dtype, str) else None
    if name is None:
        try:
            import numpy as np

            name = np.dtype(dtype).name
        except TypeError:
            name = getattr(dtype, "__name__", repr(dtype))
    name = _DTYPE_ALIASES.get(name, name) or ""
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}{_did_you_mean(str(name), DTYPES)}")
    return name


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class TensorSpec:
    """A tensor kernel argument: its shape and `nl` dtype name (an HBM input of the kernel)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self):
        try:
            shape = tuple(int(d) for d in self.shape)
        except (TypeError, ValueError):
            raise ValueError(
                f"tensor shape must be a tuple of integers, got {self.shape!r}"
            ) from None
        if not shape or any(d <= 0 for d in shape):
            raise ValueError(f"tensor shape must be non-empty with positive sizes, got {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", normalise_dtype(self.dtype))

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*$")


def parse_arg_spec(text: str) -> TensorSpec | object:
    """Parse a `--arg` value: `dtype[d0,d1,...]` is a TensorSpec, anything else a Python literal."""
    m = _SPEC.match(text)
    if m:
        dtype, dims = m.group(1), m.group(2)
        if normalise_dtype_or_none(dtype) is None:
            raise ValueError(f"unknown dtype {dtype!r} in {text!r}{_did_you_mean(dtype, DTYPES)}")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise ValueError(f"tensor dimensions must be integers in {text!r}") from None
        return TensorSpec(shape, dtype)
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"invalid argument {text!r}: expected a tensor spec like bfloat16[128,512] "
            "or a Python literal such as 7, (3, 4), True or 'causal'"
        ) from None


def normalise_dtype_or_none(dtype: object) -> str | None:
    try:
        return normalise_dtype(dtype)
    except ValueError:
        return None
