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
class HbmView:
    """Where a tensor argument lies in a larger HBM buffer: its element [0, 0, ...] is element
    `offset` of a row-major buffer of shape `buffer`, and a step along dimension k moves
    `strides[k]` elements (numpy strides divided by the itemsize)."""

    buffer: tuple[int, ...]
    offset: int
    strides: tuple[int, ...]

    def span(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """The first and last buffer element a tensor of `shape` through this view touches."""
        lo = hi = self.offset
        for n, s in zip(shape, self.strides):
            lo += min(0, (n - 1) * s)
            hi += max(0, (n - 1) * s)
        return lo, hi


@dataclass(frozen=True)
class TensorSpec:
    """A tensor kernel argument: its shape and `nl` dtype name (an HBM input of the kernel);
    `view` places it inside a larger HBM buffer (default: a buffer of its own)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    view: HbmView | None = None

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
        v = self.view
        if v is not None:
            if len(v.strides) != len(shape):
                raise ValueError(
                    f"a view of shape {shape} needs {len(shape)} strides, got {v.strides}"
                )
            size = 1
            for d in v.buffer:
                size *= d
            lo, hi = v.span(shape)
            if lo < 0 or hi >= size:
                raise ValueError(
                    f"the view (offset {v.offset}, strides {v.strides}) of shape {shape} reaches "
                    f"elements {lo}..{hi}, outside its buffer of {size} elements"
                )

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*$")


_VIEW = re.compile(r"^\s*view\(\s*([A-Za-z_][A-Za-z0-9_]*\s*\[[^\]]*\])\s*(,.*)?\)\s*$", re.S)
_VIEW_KEYS = ("shape", "offset", "strides")


def parse_view_spec(text: str) -> TensorSpec:
    """`view(dtype[buffer dims], shape=(...), offset=N, strides=(...))`: a tensor inside a
    larger HBM buffer. `shape` defaults to the buffer's, `offset` to 0 and `strides` (in
    elements) to the row-major strides of `shape`."""
    m = _VIEW.match(text)
    if m is None:
        raise ValueError(
            f"invalid view {text!r}: expected view(dtype[d0,...], shape=(...), offset=N, "
            "strides=(...))"
        )
    buffer = parse_arg_spec(m.group(1))
    keys: dict[str, object] = {}
    try:
        call = ast.parse(f"f({m.group(2)[1:] if m.group(2) else ''})", mode="eval").body
        assert isinstance(call, ast.Call) and not call.args
        for kw in call.keywords:
            if kw.arg not in _VIEW_KEYS:
                raise ValueError(f"unknown view key {kw.arg!r} (keys: {', '.join(_VIEW_KEYS)})")
            keys[kw.arg] = ast.literal_eval(kw.value)
    except (SyntaxError, AssertionError, TypeError):
        raise ValueError(f"invalid view keys in {text!r}: write key=value, ...") from None
    shape = keys.get("shape", buffer.shape)
    try:
        shape = tuple(int(d) for d in shape)  # type: ignore[union-attr]
        row, strides = 1, []
        for d in reversed(shape):
            strides.append(row)
            row *= d
        strides = tuple(int(s) for s in keys.get("strides", tuple(reversed(strides))))  # type: ignore[union-attr]
        offset = int(keys.get("offset", 0))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"view shape, offset and strides must be integers in {text!r}") from None
    return TensorSpec(shape, buffer.dtype, HbmView(buffer.shape, offset, strides))


_NAMED = re.compile(r"^\s*(nl|np)\.([A-Za-z_][A-Za-z0-9_]*)\s*$")
#: numpy / nl names of ALU operators that differ from the operator's name
_OPERATOR_ALIASES = {"max": "maximum", "min": "minimum", "amax": "maximum", "amin": "minimum"}


def parse_named(text: str):
    """`nl.add`, `np.greater_equal`, `nl.exp`, `nl.bfloat16`: the ALU operator, activation or
    dtype of that name (kernels that take an operator or a dtype as an argument); None when
    `text` is not such a name."""
    from ..ir.isa import ACTIVATIONS, ALU_OPS
    from .values import NlOp

    m = _NAMED.match(text)
    if m is None:
        return None
    name = _OPERATOR_ALIASES.get(m.group(2), m.group(2))
    if normalise_dtype_or_none(name) is not None:
        return normalise_dtype_or_none(name)
    if name in ALU_OPS or name in ACTIVATIONS:
        return NlOp(name)
    raise ValueError(f"{text.strip()!r} is not an NKI ALU operator, activation or dtype")


def parse_arg_spec(text: str) -> TensorSpec | object:
    """Parse a `--arg` value: `dtype[d0,d1,...]` is a TensorSpec, `view(...)` a TensorSpec
    inside a larger buffer (`parse_view_spec`), `nl.add` / `np.less` / `nl.bfloat16` an
    operator or dtype (`parse_named`), anything else a Python literal."""
    if text.lstrip().startswith("view("):
        return parse_view_spec(text)
    named = parse_named(text)
    if named is not None:
        return named
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
