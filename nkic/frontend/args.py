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


def parse_arg_spec(text: str) -> TensorSpec | object:
    """Parse a `--arg` value: `dtype[d0,d1,...]` is a TensorSpec, `view(...)` a TensorSpec
    inside a larger buffer (`parse_view_spec`), anything else a Python literal."""
    if text.lstrip().startswith("view("):
        return parse_view_spec(text)
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
        pass
    return parse_arg_expr(text)


#: Expression nodes an `ArgExpr` may hold: names, attributes, calls, containers, constants and
#: arithmetic; nothing that defines functions, loops or assigns.
_EXPR_NODES = (
    ast.Expression,
    ast.Name,
    ast.Attribute,
    ast.Call,
    ast.keyword,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.Subscript,
    ast.Slice,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.Load,
    ast.unaryop,
    ast.operator,
    ast.boolop,
    ast.cmpop,
)


@dataclass(frozen=True)
class ArgExpr:
    """A kernel argument written as an expression over the kernel module's names, e.g.
    `RmsNormQuantKernelArgs(eps=1e-6, dtype=nl.bfloat16)`, `QuantizationType.NONE` or
    `[bfloat16[128,256], bfloat16[128,256]]`. nkic evaluates it with its own interpreter in
    the kernel module's namespace (never with Python's `eval`); each tensor spec
    `dtype[d0,...]` in it becomes a kernel input named by its place (`tensor_input_name`)."""

    text: str

    def __post_init__(self):
        self.tree()  # validates

    def tree(self) -> ast.Expression:
        try:
            tree = ast.parse(self.text.strip(), mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            raise ValueError(
                f"invalid argument {self.text!r}: expected a tensor spec like bfloat16[128,512], "
                "a Python literal such as 7, (3, 4), True or 'causal', or an expression over "
                "the kernel module's names such as Config(eps=1e-6) or Mode.FAST"
            ) from None
        for node in ast.walk(tree):
            if not isinstance(node, _EXPR_NODES):
                raise ValueError(
                    f"invalid argument {self.text!r}: {type(node).__name__} is not allowed in an "
                    "argument expression (names, attributes, calls, literals, lists, tuples, "
                    "dicts and arithmetic are)"
                )
            if isinstance(node, ast.Subscript) and not _is_dtype(node.value):
                raise ValueError(
                    f"invalid argument {self.text!r}: only a dtype can be subscripted (a tensor "
                    f"spec dtype[d0,...]), not {ast.unparse(node.value)!r}"
                )
            if isinstance(node, ast.Subscript):
                tensor_spec_of(node, self.text)
        return tree

    def tensors(self, name: str) -> list[tuple[str, TensorSpec]]:
        """The kernel inputs the tensor specs in the expression become, for the argument
        `name`: (input name, spec), in order."""
        places: list = []
        tensor_places(self.tree().body, (name,), places)
        return [(tensor_input_name(path), tensor_spec_of(node)) for node, path in places]

    def __str__(self) -> str:
        return self.text


def _is_dtype(node: ast.AST) -> bool:
    """`bfloat16`, `nl.bfloat16`, `np.float32`, ...: a dtype name, bare or as an attribute."""
    if isinstance(node, ast.Name):
        return node.id in DTYPES
    return isinstance(node, ast.Attribute) and node.attr in DTYPES


def tensor_spec_of(node: ast.AST, text: str = "") -> TensorSpec | None:
    """The TensorSpec a `dtype[d0,...]` node of an argument expression stands for, else None."""
    if not isinstance(node, ast.Subscript) or not _is_dtype(node.value):
        return None
    dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if not all(isinstance(d, ast.Constant) and type(d.value) is int for d in dims):
        raise ValueError(
            f"tensor dimensions must be integers in {ast.unparse(node)!r}"
            + (f" (in {text!r})" if text else "")
        )
    dtype = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
    return TensorSpec(tuple(d.value for d in dims), dtype)


def tensor_input_name(path: tuple[str | int, ...]) -> str:
    """The input name of a tensor inside a structured argument: the argument name and each
    step (list or tuple index, dict key, constructor keyword or position) joined by `_`,
    e.g. `W_0` for `W=[...]` and `kargs_x` for `kargs=Args(x=...)`. A plain identifier, as
    input names name `.npy` files and `--in` options."""
    name = "_".join(str(p) for p in path)
    return re.sub(r"\W", "_", name)


def tensor_places(node: ast.AST, path: tuple, out: list) -> None:
    """The tensor specs of an argument expression, each with its place: list, tuple and call
    positions and dict keys and call keywords from the argument down."""
    if tensor_spec_of(node) is not None:
        out.append((node, path))
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for i, x in enumerate(node.elts):
            tensor_places(x, (*path, i), out)
    elif isinstance(node, ast.Dict):
        for i, (k, v) in enumerate(zip(node.keys, node.values)):
            key = k.value if isinstance(k, ast.Constant) else i
            tensor_places(v, (*path, key), out)
    elif isinstance(node, ast.Call):
        for i, x in enumerate(node.args):
            tensor_places(x, (*path, i), out)
        for kw in node.keywords:
            tensor_places(kw.value, (*path, kw.arg or "kwargs"), out)
    else:
        for child in ast.iter_child_nodes(node):
            tensor_places(child, path, out)


def parse_arg_expr(text: str) -> ArgExpr:
    return ArgExpr(text)


def normalise_dtype_or_none(dtype: object) -> str | None:
    try:
        return normalise_dtype(dtype)
    except ValueError:
        return None
