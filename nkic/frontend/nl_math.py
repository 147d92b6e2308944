"""`nki.language` math lowered to `nki.isa`: elementwise binary ops, comparisons, bitwise and
logical ops, unary math and activations, reductions, `softmax` and `rms_norm`.

Binary ops never broadcast (NKI 0.3.0): two tiles must have the same shape (`tensor_tensor`),
a tile and a number become `tensor_scalar` (`reverse0=True` when the number is on the left).
Every result is a new SBUF tile of `dtype=` (default: the input's dtype).
"""

from __future__ import annotations

import math

from ..ir.types import DTYPES
from .nl_data import broadcast_tile
from .nl_lowering import (
    emit,
    engine,
    fail,
    is_int,
    lowering,
    new_tile,
    number,
    op,
    out_dtype,
    show_shape,
    tile,
)
from .tensors import TensorView

F32 = "float32"

ARITHMETIC = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power")
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
LOGICAL = ("logical_and", "logical_or", "logical_xor")

#: Unary APIs that are one ScalarE `activation` (ISA §3).
ACTIVATION_APIS = (
    "abs", "square", "exp", "log", "sqrt", "rsqrt", "reciprocal", "arctan", "sign",
    "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_sigmoid", "gelu_apprx_tanh", "gelu_dx",
    "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "softplus", "mish", "erf", "erf_dx",
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# dtypes


def promote(a: str, b: str) -> str:
    """The result dtype of a binary op on tiles of dtypes `a` and `b`: the Beta 1 promotion
    rules of Language §9. Float wins over int; otherwise the wider type wins, except
    that an unsigned type wider than the signed one widens to the next signed size; equal
    widths of different types widen (f16+bf16 -> f32, fp8 pairs -> bf16, i8+u8 -> i16,
    i16+u16 -> i32, i32+u32 -> f32)."""
    if a == b:
        return a
    da, db = DTYPES[a], DTYPES[b]
    if da.is_float != db.is_float:
        return a if da.is_float else b
    wide, narrow = (da, db) if da.itemsize >= db.itemsize else (db, da)
    if wide.itemsize == narrow.itemsize:
        if da.is_float:
            return "bfloat16" if wide.itemsize == 1 else F32
        return {1: "int16", 2: "int32", 4: F32}[wide.itemsize]
    if da.is_float or wide.kind == "int" or _signedness(wide) == _signedness(narrow):
        return wide.name
    return {2: "int32", 4: F32}[wide.itemsize]


def _signedness(d) -> str:
    return "int" if d.kind == "int" else "uint"  # bool is stored as uint8


# ---------------------------------------------------------------------------------------------
# binary ops


def binary(ip, call, name: str, x, y, dtype):
    xt, yt = isinstance(x, TensorView), isinstance(y, TensorView)
    if not xt and not yt:
        raise fail(
            "err_invalid_argument",
            f"nl.{name} needs at least one tile operand",
            call, hint="compute with two numbers in plain Python",
        )  # fmt: skip
    if xt:
        tile(call, 0, "x", x, name)
    if yt:
        tile(call, 1, "y", y, name)
    if name in BITWISE:
        for index, arg, v in ((0, "x", x), (1, "y", y)):
            if isinstance(v, TensorView) and not is_int(v.dtype):
                raise fail(
                    "err_dtype_mismatch",
                    f"nl.{name}: `{arg}` is {v.dtype}; bitwise operations need integer tiles",
                    call, index, arg, "reinterpret the tile with .view(nl.int32)",
                )  # fmt: skip
    if xt and yt:
        return _tile_tile(ip, call, name, x, y, dtype)
    t, index, arg = (x, 1, "y") if xt else (y, 0, "x")
    s = number(ip, call, index, arg, y if xt else x, name)
    if name in BITWISE and not isinstance(s, int):
        raise fail(
            "err_dtype_mismatch",
            f"nl.{name}: `{arg}` is {s!r}; bitwise operations need an integer",
            call, index, arg,
        )  # fmt: skip
    return _tile_scalar(ip, call, name, t, s, not xt, dtype)


def _tile_tile(ip, call, name, x: TensorView, y: TensorView, dtype):
    if x.shape != y.shape:
        raise fail(
            "err_shape_mismatch",
            f"nl.{name}: `y` has shape {show_shape(y.shape)} but `x` has shape "
            f"{show_shape(x.shape)}; binary operations do not broadcast in NKI 0.3.0",
            call, 1, "y", "make the shapes equal, e.g. with nl.broadcast_to",
        )  # fmt: skip
    if x.buffer == y.buffer == "psum":
        raise fail(
            "err_unsupported_memory", f"nl.{name}: `x` and `y` are both in PSUM; at most one may be",
            call, 1, "y", "copy one of them to SBUF with nl.copy first",
        )  # fmt: skip
    if name == "power" and "psum" in (x.buffer, y.buffer):
        bad = "x" if x.buffer == "psum" else "y"
        raise fail(
            "err_unsupported_memory",
            f"nl.power: `{bad}` is in PSUM; power runs on the GpSimd engine, which cannot read PSUM",
            call, 0 if bad == "x" else 1, bad, "copy the PSUM tile to SBUF with nl.copy first",
        )  # fmt: skip
    result = out_dtype(call, 2, dtype, promote(x.dtype, y.dtype))
    dst = new_tile(ip, call, x.shape, result)
    if name == "divide":
        # no divide in the ALU table: x * (1/y), the reciprocal on VectorE (ISA §8)
        inv = new_tile(ip, call, y.shape, F32, label="divide_reciprocal")
        emit(ip, call, "reciprocal", dst=inv, data=y)
        emit(ip, call, "tensor_tensor", dst=dst, data1=x, data2=inv, op=op("multiply"))
    elif name == "power":
        emit(ip, call, "tensor_tensor", dst=dst, data1=x, data2=y, op=op("power"),
             engine=engine("gpsimd"))  # fmt: skip
    else:
        emit(ip, call, "tensor_tensor", dst=dst, data1=x, data2=y, op=op(name))
    return dst


def _tile_scalar(ip, call, name, t: TensorView, s, reverse: bool, dtype):
    result = out_dtype(call, 2, dtype, t.dtype)
    dst = new_tile(ip, call, t.shape, result)
    if name == "divide" and not reverse:
        if s == 0:
            raise fail("err_value_error", "nl.divide: division by zero", call, 1, "y")
        emit(ip, call, "tensor_scalar", dst=dst, data=t, op0=op("multiply"), operand0=1.0 / s)
    elif name == "divide":
        inv = new_tile(ip, call, t.shape, F32, label="divide_reciprocal")
        emit(ip, call, "reciprocal", dst=inv, data=t)
        emit(ip, call, "tensor_scalar", dst=dst, data=inv, op0=op("multiply"), operand0=s)
    elif name == "power":
        # power is a GpSimd tensor_tensor op only: the number becomes a filled tile
        if t.buffer == "psum":
            raise fail(
                "err_unsupported_memory",
                "nl.power runs on the GpSimd engine, which cannot read PSUM",
                call, 1 if reverse else 0, "y" if reverse else "x",
                "copy the PSUM tile to SBUF with nl.copy first",
            )  # fmt: skip
        filled = new_tile(ip, call, t.shape, F32, label="power_operand")
        emit(ip, call, "memset", dst=filled, value=float(s))
        a, b = (filled, t) if reverse else (t, filled)
        emit(ip, call, "tensor_tensor", dst=dst, data1=a, data2=b, op=op("power"),
             engine=engine("gpsimd"))  # fmt: skip
    else:
        emit(ip, call, "tensor_scalar", dst=dst, data=t, op0=op(name), operand0=s,
             reverse0=reverse)  # fmt: skip
    return dst


def _binary_api(name: str):
    def lower(ip, call, x, y, dtype=None):
        return binary(ip, call, name, x, y, dtype)

    lower.__name__ = name
    return lower


for _name in (*ARITHMETIC, *COMPARISONS, *BITWISE, *LOGICAL):
    lowering(_name)(_binary_api(_name))


# ---------------------------------------------------------------------------------------------
# unary ops


def _unary_args(ip, call, name, x, dtype) -> tuple[TensorView, TensorView]:
    x = tile(call, 0, "x", x, name)
    return x, new_tile(ip, call, x.shape, out_dtype(call, 1, dtype, x.dtype))


def _activation_api(name: str):
    def lower(ip, call, x, dtype=None):
        x, dst = _unary_args(ip, call, name, x, dtype)
        emit(ip, call, "activation", dst=dst, op=op(name), data=x)
        return dst

    lower.__name__ = name
    return lower


for _name in ACTIVATION_APIS:
    lowering(_name)(_activation_api(_name))


def rsqrt_on_gpsimd(ip, call, x, dtype=None):
    """`nl.rsqrt` from NKI 0.5 on: the GpSimd ALU's rsqrt (`tensor_scalar`), which cannot read
    PSUM (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html)."""
    x, dst = _unary_args(ip, call, "rsqrt", x, dtype)
    if x.buffer == "psum":
        raise fail(
            "err_unsupported_memory",
            "nl.rsqrt runs on the GpSimd engine (NKI 0.5 and later), which cannot read PSUM",
            call, 0, "x",
            "copy the PSUM tile to SBUF with nl.copy first, or use nisa.activation(op=nl.rsqrt)",
        )  # fmt: skip
    emit(ip, call, "tensor_scalar", dst=dst, data=x, op0=op("rsqrt"), operand0=0.0,
         engine=engine("gpsimd"))  # fmt: skip
    return dst


@lowering("negative")
def negative(ip, call, x, dtype=None):
    """`-x` as `tensor_scalar(multiply, -1.0)` (no negate activation exists)."""
    x, dst = _unary_args(ip, call, "negative", x, dtype)
    emit(ip, call, "tensor_scalar", dst=dst, data=x, op0=op("multiply"), operand0=-1.0)
    return dst


@lowering("invert")
def invert(ip, call, x, dtype=None):
    x, dst = _unary_args(ip, call, "invert", x, dtype)
    if not is_int(x.dtype):
        raise fail(
            "err_dtype_mismatch", f"nl.invert: `x` is {x.dtype}; it must be an integer tile",
            call, 0, "x", "reinterpret the tile with .view(nl.int32)",
        )  # fmt: skip
    emit(ip, call, "tensor_scalar", dst=dst, data=x, op0=op("invert"), operand0=0)
    return dst


@lowering("logical_not")
def logical_not(ip, call, x, dtype=None):
    """`x == 0`: 1 where x is 0, else 0 (for 0/1 inputs the same as XOR 1)."""
    x, dst = _unary_args(ip, call, "logical_not", x, dtype)
    emit(ip, call, "tensor_scalar", dst=dst, data=x, op0=op("equal"), operand0=0.0)
    return dst


# sin / cos / tan: ScalarE's sine is only valid on [-pi, pi], so the argument is reduced first.
# k = round(x / 2pi) (an fp32 -> int32 conversion rounds to nearest even), then r = x - 2pi k in
# two steps (Cody-Waite: 2pi = C1 + C2 with C1 exact in 8 bits, so k * C1 is exact).
_TWO_PI_HI = 6.28125
_TWO_PI_LO = 2 * math.pi - _TWO_PI_HI


def _sine(ip, call, x: TensorView, dst: TensorView, phase_quarters: int) -> None:
    """dst = sin(x + phase_quarters * pi/2), accurate for |x| < 2**31 * 2pi."""
    k = new_tile(ip, call, x.shape, "int32", label="sin_turns")
    emit(ip, call, "tensor_scalar", dst=k, data=x, op0=op("multiply"),
         operand0=1 / (2 * math.pi), op1=op("add"), operand1=phase_quarters / 4)  # fmt: skip
    hi = new_tile(ip, call, x.shape, F32, label="sin_reduced")
    emit(ip, call, "scalar_tensor_tensor", dst=hi, data=k, op0=op("multiply"),
         operand0=-_TWO_PI_HI, op1=op("add"), operand1=x)  # fmt: skip
    r = new_tile(ip, call, x.shape, F32, label="sin_reduced")
    emit(ip, call, "scalar_tensor_tensor", dst=r, data=k, op0=op("multiply"),
         operand0=-_TWO_PI_LO, op1=op("add"), operand1=hi)  # fmt: skip
    if phase_quarters:
        shifted = new_tile(ip, call, x.shape, F32, label="sin_reduced")
        emit(ip, call, "tensor_scalar", dst=shifted, data=r, op0=op("add"),
             operand0=phase_quarters * math.pi / 2)  # fmt: skip
        r = shifted
    emit(ip, call, "activation", dst=dst, op=op("sin"), data=r)


@lowering("sin")
def sin(ip, call, x, dtype=None):
    x, dst = _unary_args(ip, call, "sin", x, dtype)
    _sine(ip, call, x, dst, 0)
    return dst


@lowering("cos")
def cos(ip, call, x, dtype=None):
    """cos(x) = sin(x + pi/2), reduced to [-pi, pi] before the activation."""
    x, dst = _unary_args(ip, call, "cos", x, dtype)
    _sine(ip, call, x, dst, 1)
    return dst


@lowering("tan")
def tan(ip, call, x, dtype=None):
    """sin(x) * (1 / cos(x)), the reciprocal on VectorE."""
    x, dst = _unary_args(ip, call, "tan", x, dtype)
    s = new_tile(ip, call, x.shape, F32, label="tan_sin")
    c = new_tile(ip, call, x.shape, F32, label="tan_cos")
    _sine(ip, call, x, s, 0)
    _sine(ip, call, x, c, 1)
    emit(ip, call, "reciprocal", dst=c, data=c)
    emit(ip, call, "tensor_tensor", dst=dst, data1=s, data2=c, op=op("multiply"))
    return dst


def _floor_into(ip, call, x: TensorView, dst: TensorView, mode: str) -> None:
    """floor / ceil via the round-to-nearest-even fp32 -> int32 conversion: r = rne(x), then
    floor = r - (r > x), ceil = r + (r < x). Exact for |x| < 2**31."""
    r = new_tile(ip, call, x.shape, "int32", label=f"{mode}_rounded")
    emit(ip, call, "tensor_copy", dst=r, src=x)
    fix = new_tile(ip, call, x.shape, F32, label=f"{mode}_fix")
    cmp, combine = ("greater", "subtract") if mode == "floor" else ("less", "add")
    emit(ip, call, "tensor_tensor", dst=fix, data1=r, data2=x, op=op(cmp))
    emit(ip, call, "tensor_tensor", dst=dst, data1=r, data2=fix, op=op(combine))


@lowering("floor")
def floor(ip, call, x, dtype=None):
    x, dst = _unary_args(ip, call, "floor", x, dtype)
    _floor_into(ip, call, x, dst, "floor")
    return dst


@lowering("ceil")
def ceil(ip, call, x, dtype=None):
    x, dst = _unary_args(ip, call, "ceil", x, dtype)
    _floor_into(ip, call, x, dst, "ceil")
    return dst


@lowering("trunc")
def trunc(ip, call, x, dtype=None):
    """trunc(x) = sign(x) * floor(|x|)."""
    x, dst = _unary_args(ip, call, "trunc", x, dtype)
    a = new_tile(ip, call, x.shape, F32, label="trunc_abs")
    emit(ip, call, "tensor_scalar", dst=a, data=x, op0=op("abs"), operand0=0)
    f = new_tile(ip, call, x.shape, F32, label="trunc_floor")
    _floor_into(ip, call, a, f, "floor")
    s = new_tile(ip, call, x.shape, F32, label="trunc_sign")
    emit(ip, call, "activation", dst=s, op=op("sign"), data=x)
    emit(ip, call, "tensor_tensor", dst=dst, data1=f, data2=s, op=op("multiply"))
    return dst


# ---------------------------------------------------------------------------------------------
# reductions


def reduce_axes(ip, call, index: int, x: TensorView, axis, fn: str) -> tuple[int, ...]:
    """`axis` (an int or a list/tuple of ints) as trailing free dimensions of `x`."""
    items = axis if isinstance(axis, (list, tuple)) else (axis,)
    rank = len(x.shape)
    axes = []
    for a in items:
        a = ip.need_concrete(a, "an axis")
        if isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank:
            raise fail(
                "err_invalid_argument",
                f"nl.{fn}: `axis` must be dimensions of the {rank}-D tile, got {axis!r}",
                call, index, "axis",
            )  # fmt: skip
        axes.append(a % rank)
    axes = sorted(set(axes))
    valid = ", ".join(str(list(range(k, rank))) for k in range(rank - 1, 0, -1))
    if not axes or 0 in axes:
        raise fail(
            "err_invalid_argument",
            f"nl.{fn}: `axis` {axis!r} includes the partition dimension 0",
            call, index, "axis",
            "reduce over free dimensions only; across partitions use nisa.tensor_partition_reduce "
            "or a matmul with a ones vector",
        )  # fmt: skip
    if axes != list(range(axes[0], rank)):
        raise fail(
            "err_invalid_argument",
            f"nl.{fn}: `axis` {axis!r} must be trailing contiguous free dimensions of the tile "
            f"{show_shape(x.shape)}",
            call, index, "axis", f"valid choices: {valid}",
        )  # fmt: skip
    return tuple(axes)


def _reduced_shape(x: TensorView, axes, keepdims: bool) -> tuple[int, ...]:
    kept = x.shape[: axes[0]]
    if keepdims:
        return kept + (1,) * len(axes)
    return kept if len(kept) >= 2 else kept + (1,)  # a tile stays at least 2-D


def _count(x: TensorView, axes) -> int:
    return math.prod(x.shape[a] for a in axes)


def _reduce(ip, call, x, axes, alu: str, dtype: str, keepdims: bool, label=""):
    dst = new_tile(ip, call, _reduced_shape(x, axes, keepdims), dtype, label=label)
    emit(ip, call, "tensor_reduce", dst=dst, op=op(alu), data=x, axis=axes,
         keepdims=len(dst.shape) == len(x.shape))  # fmt: skip
    return dst


def _broadcast_back(t: TensorView, x: TensorView, axes) -> TensorView:
    """A keepdims reduction result viewed with stride 0 along the reduced axes of `x`."""
    for a in axes:
        t = t.broadcast(a, x.shape[a])
    return t


def _reduction_api(name: str, alu: str):
    def lower(ip, call, x, axis, dtype=None, keepdims=False):
        x = tile(call, 0, "x", x, name)
        if keepdims is False and ip.language.version == "beta1":  # Beta 1 reduced any free dims
            x, axis = _reduced_last(x, axis)
        axes = reduce_axes(ip, call, 1, x, axis, name)
        result = out_dtype(call, 2, dtype, x.dtype)
        keep = _keepdims(call, keepdims, name)
        if name != "mean":
            return _reduce(ip, call, x, axes, alu, result, keep)
        total = _reduce(ip, call, x, axes, "add", F32, keep, label="mean_sum")
        dst = new_tile(ip, call, total.shape, result)
        emit(ip, call, "tensor_scalar", dst=dst, data=total, op0=op("multiply"),
             operand0=1.0 / _count(x, axes))  # fmt: skip
        return dst

    lower.__name__ = name
    return lower


def _reduced_last(x: TensorView, axis):
    """`x` viewed with the free dimensions reduced over (`axis`, ints) moved last, in order,
    and those trailing axes; unchanged when that is not possible. Without keepdims the
    result's shape is the same either way (numpy: `x.sum(axis=(2, 4))`)."""
    items = axis if isinstance(axis, (list, tuple)) else (axis,)
    rank = len(x.shape)
    if not all(isinstance(a, int) and not isinstance(a, bool) and -rank <= a < rank
               for a in items):  # fmt: skip
        return x, axis
    axes = sorted({a % rank for a in items})
    if not axes or 0 in axes or axes == list(range(axes[0], rank)) or x.dynamic is not None:
        return x, axis
    order = [d for d in range(rank) if d not in axes] + axes
    moved = TensorView(x.tensor, x.offset, [x.pattern[d] for d in order], x.dtype)
    return moved, list(range(rank - len(axes), rank))


def _keepdims(call, keepdims, name) -> bool:
    if not isinstance(keepdims, bool):
        raise fail(
            "err_invalid_argument", f"nl.{name}: `keepdims` must be True or False",
            call, 3, "keepdims",
        )  # fmt: skip
    return keepdims


for _name, _alu in (("sum", "add"), ("max", "maximum"), ("min", "minimum"), ("prod", "multiply"),
                    ("mean", "add")):  # fmt: skip
    lowering(_name)(_reduction_api(_name, _alu))


@lowering("all")
def all_(ip, call, x, axis, dtype=None):
    """1 where every element along `axis` is nonzero (a logical_and reduction)."""
    x = tile(call, 0, "x", x, "all")
    axes = reduce_axes(ip, call, 1, x, axis, "all")
    return _reduce(ip, call, x, axes, "logical_and", out_dtype(call, 2, dtype, x.dtype), False)


@lowering("var")
def var(ip, call, x, axis, dtype=None, keepdims=False):
    """Population variance mean((x - mean(x))**2), fp32 intermediates; the result always keeps
    the reduced dimensions (as in NKI)."""
    x = tile(call, 0, "x", x, "var")
    axes = reduce_axes(ip, call, 1, x, axis, "var")
    result = out_dtype(call, 2, dtype, x.dtype)
    _keepdims(call, keepdims, "var")
    inv_n = 1.0 / _count(x, axes)
    total = _reduce(ip, call, x, axes, "add", F32, True, label="var_sum")
    mean = new_tile(ip, call, total.shape, F32, label="var_mean")
    emit(ip, call, "tensor_scalar", dst=mean, data=total, op0=op("multiply"), operand0=inv_n)
    diff = new_tile(ip, call, x.shape, F32, label="var_diff")
    emit(ip, call, "tensor_tensor", dst=diff, data1=x, data2=_broadcast_back(mean, x, axes),
         op=op("subtract"))  # fmt: skip
    emit(ip, call, "tensor_tensor", dst=diff, data1=diff, data2=diff, op=op("multiply"))
    squares = _reduce(ip, call, diff, axes, "add", F32, True, label="var_squares")
    dst = new_tile(ip, call, squares.shape, result)
    emit(ip, call, "tensor_scalar", dst=dst, data=squares, op0=op("multiply"), operand0=inv_n)
    return dst


@lowering("softmax")
def softmax(ip, call, x, axis=-1, dtype=None):
    """exp(x - max) / sum(exp(x - max)) over trailing free axes, fp32 intermediates."""
    x = tile(call, 0, "x", x, "softmax")
    axes = reduce_axes(ip, call, 1, x, axis, "softmax")
    result = out_dtype(call, 2, dtype, x.dtype)
    top = _reduce(ip, call, x, axes, "maximum", F32, True, label="softmax_max")
    exps = new_tile(ip, call, x.shape, F32, label="softmax_exp")
    emit(ip, call, "tensor_tensor", dst=exps, data1=x, data2=_broadcast_back(top, x, axes),
         op=op("subtract"))  # fmt: skip
    emit(ip, call, "activation", dst=exps, op=op("exp"), data=exps)
    total = _reduce(ip, call, exps, axes, "add", F32, True, label="softmax_sum")
    emit(ip, call, "reciprocal", dst=total, data=total)
    dst = new_tile(ip, call, x.shape, result)
    emit(ip, call, "tensor_tensor", dst=dst, data1=exps, data2=_broadcast_back(total, x, axes),
         op=op("multiply"))  # fmt: skip
    return dst


@lowering("rms_norm")
def rms_norm(ip, call, x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None):
    """x / sqrt(sum(x**2, axis) / n + epsilon) * w. `w` has the shape of `x`, or one partition
    `(1, ...)` that is broadcast to x's partitions (TensorE, as nl.broadcast_to)."""
    x = tile(call, 0, "x", x, "rms_norm")
    w = tile(call, 1, "w", w, "rms_norm")
    axes = reduce_axes(ip, call, 2, x, axis, "rms_norm")
    n = ip.need_int(n, "an integer for `n`")
    if n <= 0:
        raise fail("err_invalid_argument", "nl.rms_norm: `n` must be positive", call, 3, "n")
    eps = number(ip, call, 4, "epsilon", epsilon, "rms_norm")
    result = out_dtype(call, 5, dtype, x.dtype)
    work = out_dtype(call, 6, compute_dtype, F32) if compute_dtype is not None else F32
    if not DTYPES[work].is_float:
        raise fail(
            "err_invalid_argument", f"nl.rms_norm: `compute_dtype` must be a float type, got {work}",
            call, 6, "compute_dtype",
        )  # fmt: skip
    if w.shape != x.shape:
        if w.shape[0] != 1 or w.shape[1:] != x.shape[1:]:
            raise fail(
                "err_shape_mismatch",
                f"nl.rms_norm: `w` has shape {show_shape(w.shape)}; it must be {show_shape(x.shape)} "
                f"or {show_shape((1,) + x.shape[1:])}",
                call, 1, "w",
            )  # fmt: skip
        w = broadcast_tile(ip, call, w, x.shape, w.dtype, "rms_norm", (1, "w"))
    squares = new_tile(ip, call, x.shape, work, label="rms_norm_squares")
    emit(ip, call, "tensor_tensor", dst=squares, data1=x, data2=x, op=op("multiply"))
    total = _reduce(ip, call, squares, axes, "add", F32, True, label="rms_norm_sum")
    emit(ip, call, "tensor_scalar", dst=total, data=total, op0=op("multiply"), operand0=1.0 / n,
         op1=op("add"), operand1=float(eps))  # fmt: skip
    emit(ip, call, "activation", dst=total, op=op("rsqrt"), data=total)
    normed = new_tile(ip, call, x.shape, work, label="rms_norm_scaled")
    emit(ip, call, "tensor_tensor", dst=normed, data1=x, data2=_broadcast_back(total, x, axes),
         op=op("multiply"))  # fmt: skip
    dst = new_tile(ip, call, x.shape, result)
    emit(ip, call, "tensor_tensor", dst=dst, data1=normed, data2=w, op=op("multiply"))
    return dst
