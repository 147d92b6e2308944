"""Semantics of the Scalar Engine: activation, activation_reduce, activate2 and the table of
activation functions (ISA §3)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nkirt.isa import accumulators
from nkirt.isa.elementwise import stage
from nkirt.isa.operands import fp32, fp32_param, rows
from nkirt.isa.registry import semantics

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715
_GELU_SIGMOID_SCALE = 1.702

_erf = np.frompyfunc(math.erf, 1, 1)


def _erf64(x):
    return np.asarray(_erf(x), dtype=np.float64)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _normal_cdf(x):
    return 0.5 * (1.0 + _erf64(x * _SQRT_HALF))


def _sign(x):
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, np.where(np.isnan(x), np.nan, 0.0)))


def _sin_without_range_reduction(x):
    """sin on [-π, π]; outside, the cubic Taylor polynomial of sin about ±π, which the ScalarE
    polynomial follows when not range-reduced: -(t) + t³/6 with t = x ∓ π (sin(9) ≈ 27.65)."""
    t = x - np.copysign(np.pi, x)
    cubic = -t + t**3 / 6.0
    return np.where(np.abs(x) <= np.pi, np.sin(x), cubic)


def _gelu_apprx_sigmoid_dx(x):
    s = _sigmoid(_GELU_SIGMOID_SCALE * x)
    return s + _GELU_SIGMOID_SCALE * x * s * (1.0 - s)


def _silu_dx(x):
    s = _sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


#: Activation function -> its exact value on float64 inputs (the result is rounded to fp32).
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda x: x,
    "bypass": lambda x: x,  # NKI 0.4 (trn3): the input passes through
    "square": lambda x: x * x,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: x * _normal_cdf(x),
    "gelu_dx": lambda x: _normal_cdf(x) + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x),
    "gelu_apprx_tanh": lambda x: (
        0.5 * x * (1.0 + np.tanh(_GELU_TANH_SCALE * (x + _GELU_TANH_CUBIC * x**3)))
    ),
    "gelu_apprx_sigmoid": lambda x: x * _sigmoid(_GELU_SIGMOID_SCALE * x),
    "gelu_apprx_sigmoid_dx": _gelu_apprx_sigmoid_dx,
    "silu": lambda x: x * _sigmoid(x),
    "silu_dx": _silu_dx,
    "tanh": np.tanh,
    "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "erf": _erf64,
    "erf_dx": lambda x: _TWO_OVER_SQRT_PI * np.exp(-x * x),
    "exp": np.exp,
    "log": np.log,
    "sin": _sin_without_range_reduction,
    "arctan": np.arctan,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "sign": _sign,
    "abs": np.abs,
}


#: ISA §3: the functions whose ScalarE polynomial holds only on part of the line, and
#: that part (of |x| for reciprocal). Outside it the hardware output is undefined.
VALID_RANGES: dict[str, tuple[float, float]] = {
    "log": (2.0**-64, 2.0**64),
    "sin": (-math.pi, math.pi),
    "arctan": (-math.pi / 2, math.pi / 2),
    "sqrt": (2.0**-116, 2.0**118),
    "rsqrt": (2.0**-87, 2.0**97),
    "reciprocal": (2.0**-42, 2.0**42),
}


def check_range(ctx, op: str, values: np.ndarray) -> None:
    """Warn (`ctx.warn`) when inputs of `op` lie outside its valid range (NaNs are not counted:
    they propagate anyway)."""
    bounds = VALID_RANGES.get(op)
    if bounds is None:
        return
    lo, hi = bounds
    x = np.asarray(values)
    magnitude = np.abs(x) if op == "reciprocal" else x
    with np.errstate(invalid="ignore"):
        outside = (magnitude < lo) | (magnitude > hi)
    if not outside.any():
        return
    where = tuple(int(i) for i in np.argwhere(outside)[0])
    span = f"±[{lo:.3g}, {hi:.3g}]" if op == "reciprocal" else f"[{lo:.3g}, {hi:.3g}]"
    consequence = (
        "the hardware does not range-reduce; nkic follows its cubic extrapolation"
        if op == "sin"
        else "the hardware result there is undefined; nkic computes the exact function"
    )
    ctx.warn(
        f"{op}: {int(outside.sum())} of {x.size} inputs outside the valid range "
        f"{span} (e.g. {float(x[where]):.6g} at {list(where)}); {consequence}"
    )


def evaluate(
    op: str, values: np.ndarray, instruction: str, relu_param: float = 0.0, scratch=None
) -> np.ndarray:
    """Activation `op` of fp32 `values`: computed in float64, rounded once to fp32. With
    `scratch` (`nkirt.scratch`), the float64 values, a function that is a numpy ufunc and the
    rounding write into its temporaries."""
    with np.errstate(all="ignore"):  # (converting a signalling NaN raises "invalid")
        if scratch is None:
            x = np.asarray(values, dtype=np.float64)
        else:
            x = scratch.astype(np.asarray(values), np.float64)
        if op == "prelu":
            result = np.where(x >= 0, x, np.float64(np.float32(relu_param)) * x)
        elif op in FUNCTIONS:
            fn = FUNCTIONS[op]
            if scratch is not None and isinstance(fn, np.ufunc):
                result = fn(x, out=x)
            else:
                result = fn(x)
        else:
            raise ValueError(f"{instruction}: unsupported activation function {op!r}")
        result = np.asarray(result, dtype=np.float64)
        if scratch is None:
            return result.astype(np.float32)
        return scratch.astype(result, np.float32)


def _accumulate(ctx, attrs, instruction: str, values: np.ndarray, cmd: str) -> np.ndarray:
    reduce_op = attrs.get("reduce_op") or "add"
    acc = accumulators.apply_reduce_cmd(
        ctx,
        "scalar",
        instruction,
        cmd,
        reduce_op,
        rows(values),
        first=accumulators.first_lane(attrs),
    )
    return acc.reshape(-1, 1)


def _scaled_input(ctx, ops, attrs, instruction: str) -> np.ndarray:
    """data * scale + bias in fp32, each step rounded (not fused)."""
    data, scratch = ops["data"], ctx.scratch
    value = fp32("data", ops, attrs, scratch)
    scale = fp32_param("scale", ops, attrs, data.ndim, 1.0)
    value = stage("multiply", value, scale, False, instruction, scratch)
    bias = fp32_param("bias", ops, attrs, data.ndim, None)
    if bias is not None:
        value = stage("add", value, bias, False, instruction, scratch)
    return value


@semantics("activation", outputs=("dst", "reduce_res"))
def activation(ctx, ops, attrs):
    if attrs["op"] == "prelu":
        raise ValueError("activation: prelu needs relu_param; use activate2")
    value = _scaled_input(ctx, ops, attrs, "activation")
    check_range(ctx, attrs["op"], value)
    values = evaluate(attrs["op"], value, "activation", scratch=ctx.scratch)
    cmd = attrs.get("reduce_cmd", "idle")
    return {"dst": values, "reduce_res": _accumulate(ctx, attrs, "activation", values, cmd)}


@semantics("activation_reduce", outputs=("dst", "reduce_res"))
def activation_reduce(ctx, ops, attrs):
    value = _scaled_input(ctx, ops, attrs, "activation_reduce")
    check_range(ctx, attrs["op"], value)
    values = evaluate(attrs["op"], value, "activation_reduce", scratch=ctx.scratch)
    reduce_res = _accumulate(ctx, attrs, "activation_reduce", values, "reset_reduce")
    return {"dst": values, "reduce_res": reduce_res}


@semantics("activate2", outputs=("dst", "reduce_res"))
def activate2(ctx, ops, attrs):
    data = ops["data"]
    value = fp32("data", ops, attrs)
    for index in (0, 1):
        op = attrs.get(f"op{index}")
        if op in (None, "bypass"):
            continue
        if op not in ("multiply", "add", "subtract"):
            raise ValueError(f"activate2: unsupported op{index} {op!r}")
        operand = fp32_param(f"imm{index}", ops, attrs, data.ndim)
        value = stage(op, value, operand, attrs.get(f"reverse{index}", False), "activate2")
    check_range(ctx, attrs["op"], value)
    values = evaluate(attrs["op"], value, "activate2", attrs.get("relu_param", 0.0))
    cmd = attrs.get("reduce_cmd", "idle")
    return {"dst": values, "reduce_res": _accumulate(ctx, attrs, "activate2", values, cmd)}
