"""activation (every function, scale, bias, accumulators), activation_reduce, activate2."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import nkic

from .helpers import BF16, TARGETS, assert_bits, f32, isa, rnd, run

_erf = np.vectorize(math.erf)


def _sig(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _phi(x):
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


def _sin_ext(x):
    # ISA §3: no range reduction; outside [-pi, pi] the cubic extrapolation
    # (documented example sin(9.0) ~ 27.65): docs/numerics.md §7
    t = x - np.sign(x) * np.pi
    return np.where(np.abs(x) <= np.pi, np.sin(x), -t + t**3 / 6)


# exact float64 definitions from ISA §3 / docs/numerics.md §7
FUNCS = {
    "copy": lambda x: x,
    "square": lambda x: x * x,
    "sigmoid": _sig,
    "relu": lambda x: np.where(x > 0, x, 0.0),
    "gelu": lambda x: x * _phi(x),
    "gelu_dx": lambda x: _phi(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi),
    "gelu_apprx_tanh": lambda x: (
        0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    ),
    "gelu_apprx_sigmoid": lambda x: x * _sig(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: _sig(1.702 * x) * (1 + 1.702 * x * (1 - _sig(1.702 * x))),
    "silu": lambda x: x * _sig(x),
    "silu_dx": lambda x: _sig(x) * (1 + x * (1 - _sig(x))),
    "tanh": np.tanh,
    "softplus": lambda x: np.log1p(np.exp(x)),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "erf": _erf,
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x),
    "exp": np.exp,
    "log": np.log,
    "sin": _sin_ext,
    "arctan": np.arctan,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x,
    "sign": np.sign,
    "abs": np.abs,
}
# inputs inside each function's documented valid range
POSITIVE = {"log", "sqrt", "rsqrt"}
EXACT = {"copy", "square", "relu", "sign", "abs", "reciprocal"}


def _input(fn, shape, seed):
    x = rnd(shape, seed=seed, scale=1.2)
    if fn in POSITIVE:
        x = np.abs(x) + f32(0.01)
    if fn in ("arctan",):
        x = np.clip(x, -1.5, 1.5).astype(np.float32)
    return x


def _close(got, want):
    """Exact functions bit for bit; transcendental ones within 1 ulp of the float64 value
    (the reference computes its own float64 formula)."""
    got = np.asarray(got, np.float32)
    np.testing.assert_array_max_ulp(got, want, maxulp=1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", sorted(FUNCS))
def test_activation_every_function_with_scale_and_bias(target, fn):
    x = _input(fn, (6, 2, 5), seed=1)
    bias = f32(np.full((6, 1), 0.125))
    scale = 0.75 if fn not in POSITIVE else 1.0
    attrs = dict(op=f"nl.{fn}", scale=scale)
    ins = {"data": {"t": 0, "p0": 32}}
    arrays = [x]
    if not (fn == "reciprocal" and target == "trn1"):
        ins["bias"] = {"t": 1}
        arrays.append(bias)
    else:
        bias = np.zeros((6, 1), np.float32)
    got = isa(
        "activation",
        arrays,
        ins,
        {"dst": {"shape": (6, 2, 5), "dtype": "float32"}},
        target=target,
        **attrs,
    )
    v = f32(f32(x * np.float32(scale)) + bias.reshape(6, 1, 1))
    with np.errstate(all="ignore"):
        want = f32(FUNCS[fn](v.astype(np.float64)))
    if fn in EXACT:
        assert_bits(got, want)
    else:
        _close(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_activation_specials_and_sin_extrapolation(target):
    x = f32([[0.0, -0.0, np.inf, -np.inf, np.nan, 9.0, -9.0, 3.0]])
    for fn in ("copy", "abs", "sin", "sign"):
        # ±inf and ±9 are outside sin's valid range [-π, π]: the run says so
        warns = pytest.warns(nkic.SimulationWarning, match="sin: 4 of 8")
        with warns if fn == "sin" else contextlib.nullcontext():
            got = isa(
                "activation",
                [x],
                {"data": {"t": 0}},
                {"dst": {"shape": (1, 8), "dtype": "float32"}},
                target=target,
                op=f"nl.{fn}",
            )
        with np.errstate(all="ignore"):
            want = f32(FUNCS[fn](x.astype(np.float64)))
        if fn == "sign":
            want[0, 1] = 0.0  # sign(-0) = +0 (docs/numerics.md §7)
        if fn == "sin":
            assert abs(float(got[0, 5]) - 27.65) < 0.01
            _close(got[:, 5:], want[:, 5:])
        else:
            assert_bits(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_activation_per_partition_scale_psum_io_bf16(target):
    x = rnd((8, 12), seed=2)
    scale = rnd((8, 1), seed=3)
    got = isa(
        "activation",
        [x, scale],
        {"data": {"t": 0, "buf": "psum"}, "scale": {"t": 1}},
        {"dst": {"shape": (8, 12), "dtype": "bfloat16", "buf": "psum"}},
        target=target,
        op="nl.copy",
    )
    assert_bits(got, f32(x * scale).astype(BF16))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_activation_scalar_bias_v3(target):
    x = rnd((4, 6), seed=4)
    got = isa(
        "activation",
        [x],
        {"data": {"t": 0}},
        {"dst": {"shape": (4, 6), "dtype": "float32"}},
        target=target,
        op="nl.relu",
        bias=-0.5,
        scale=2.0,
    )
    v = f32(f32(x * np.float32(2)) + np.float32(-0.5))
    assert_bits(got, np.where(v > 0, v, f32(0)))


@pytest.mark.parametrize("target", TARGETS)
def test_activation_reduce_into_reduce_res(target):
    x = rnd((5, 3, 4), seed=5)
    got, res = isa(
        "activation",
        [x],
        {"data": {"t": 0}},
        {
            "dst": {"shape": (5, 3, 4), "dtype": "bfloat16"},
            "reduce_res": {"shape": (5, 1), "dtype": "float32"},
        },
        target=target,
        op="nl.square",
        reduce_op="nl.add",
        reduce_cmd="rc.reset_reduce",
    )
    y = f32(x * x)
    assert_bits(got, y.astype(BF16))
    acc = np.zeros(5, np.float32)
    for v in y.reshape(5, -1).T:
        acc = f32(acc + v)
    assert_bits(res, acc.reshape(5, 1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "cmds",
    [
        ("reset_reduce", "reduce"),
        ("reset_reduce", "reset_reduce"),
        ("reset", "reduce"),
        ("reduce", "idle"),
    ],
)
def test_activation_accumulator_commands_across_instructions(target, cmds):
    x, y = rnd((4, 8), seed=6), rnd((4, 8), seed=7)
    d1, res = run("accumulators", "activation_sequence", [x, y], target, cmds=cmds, op="copy")
    assert_bits(d1, y)
    acc = np.zeros(4, np.float32)  # registers start at zero
    for cmd, data in zip(cmds, (x, y)):
        if cmd in ("reset", "reset_reduce"):
            acc = np.zeros(4, np.float32)
        if cmd in ("reduce", "reset_reduce"):
            for v in data.T:
                acc = f32(acc + v)
    assert_bits(res, acc.reshape(4, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_activation_reduce(target):
    x = rnd((7, 10), seed=8)
    bias = rnd((7, 1), seed=9)
    got, res = isa(
        "activation_reduce",
        [x, bias],
        {"data": {"t": 0}, "bias": {"t": 1}},
        {
            "dst": {"shape": (7, 10), "dtype": "float32"},
            "reduce_res": {"shape": (7, 1), "dtype": "float32"},
        },
        target=target,
        op="nl.exp",
        reduce_op="nl.add",
        scale=0.5,
    )
    v = f32(f32(x * np.float32(0.5)) + bias)
    e = f32(np.exp(v.astype(np.float64)))
    _close(got, e)
    acc = np.zeros(7, np.float32)
    for col in np.asarray(got).T:
        acc = f32(acc + col)
    assert_bits(res, acc.reshape(7, 1))


# ---------------------------------------------------------------------------------- activate2

A2 = {"multiply": np.multiply, "add": np.add, "subtract": np.subtract}


@pytest.mark.parametrize(
    ("op0", "op1", "rev0", "rev1"),
    [
        ("multiply", "add", False, False),
        ("multiply", "subtract", False, True),
        ("subtract", "bypass", True, False),
        ("add", "bypass", False, False),
        ("bypass", "bypass", False, False),
    ],
)
@pytest.mark.parametrize("fn", ["prelu", "copy", "exp"])
def test_activate2_trn3(op0, op1, rev0, rev1, fn):
    x = rnd((6, 9), seed=10)
    imm1 = rnd((6, 1), seed=11)
    attrs = dict(
        op=f"nl.{fn}",
        imm0=1.5,
        op0=f"nl.{op0}",
        op1=f"nl.{op1}",
        reverse0=rev0,
        reverse1=rev1,
        relu_param=0.25,
    )
    got = isa(
        "activate2",
        [x, imm1],
        {"data": {"t": 0}, "imm1": {"t": 1}},
        {"dst": {"shape": (6, 9), "dtype": "float32"}},
        target="trn3",
        **attrs,
    )
    v = x
    for op, imm, rev in ((op0, f32(1.5), rev0), (op1, imm1, rev1)):
        if op != "bypass":
            v = f32(A2[op](imm, v) if rev else A2[op](v, imm))
    if fn == "prelu":
        assert_bits(got, np.where(v >= 0, v, f32(v * f32(0.25))))
    elif fn == "copy":
        assert_bits(got, v)
    else:
        _close(got, f32(np.exp(v.astype(np.float64))))


@pytest.mark.parametrize("rop", ["add", "maximum", "minimum", "abs_max", "abs_min"])
def test_activate2_reduce_trn3(rop):
    x = rnd((4, 7), seed=12)
    got, res = isa(
        "activate2",
        [x],
        {"data": {"t": 0}},
        {
            "dst": {"shape": (4, 7), "dtype": "float32"},
            "reduce_res": {"shape": (4, 1), "dtype": "float32"},
        },
        target="trn3",
        op="nl.copy",
        imm0=2.0,
        imm1=-1.0,
        op0="nl.multiply",
        op1="nl.add",
        reduce_op=f"nl.{rop}",
        reduce_cmd="rc.reset_reduce",
    )
    v = f32(f32(x * f32(2)) + f32(-1))
    assert_bits(got, v)
    ident = {"add": 0.0, "maximum": -np.inf, "minimum": np.inf, "abs_max": 0.0, "abs_min": np.inf}[
        rop
    ]
    acc = np.full(4, ident, np.float32)
    for col in v.T:
        if rop == "add":
            acc = f32(acc + col)
        elif rop == "maximum":
            acc = np.maximum(acc, col)
        elif rop == "minimum":
            acc = np.minimum(acc, col)
        elif rop == "abs_max":  # the operand with the larger magnitude; ties -> the new value
            acc = np.where(np.abs(acc) > np.abs(col), acc, col)
        else:
            acc = np.where(np.abs(acc) < np.abs(col), acc, col)
    assert_bits(res, acc.reshape(4, 1))


@pytest.mark.parametrize("target", TARGETS)
def test_accumulator_registers_are_per_physical_partition(target):
    x = np.ones((4, 5), np.float32)
    res = run("accumulators", "activation_lanes", [x], target)
    # registers 0..3 are zero at power-on; the first instruction used registers 32..35
    assert_bits(res, np.full((4, 1), 5.0, np.float32))


def test_out_of_range_inputs_raise_a_simulation_warning_naming_the_line():
    x = f32([[-1.0, 2.0, 0.0, 4.0]])
    with pytest.warns(nkic.SimulationWarning, match=r"activation at .*common\.py:\d+: log: 2 of 4"):
        got = isa(
            "activation",
            [x],
            {"data": {"t": 0}},
            {"dst": {"shape": (1, 4), "dtype": "float32"}},
            op="nl.log",
        )
    assert got[0, 1] == np.float32(np.log(2.0))  # the values are still computed
