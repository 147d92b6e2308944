"""Helpers for the end-to-end `nki.isa` tests: compile with nkic, run on the simulator."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nkic

KERNELS = Path(__file__).resolve().parent / "kernels"
TARGETS = ("trn1", "trn2", "trn3")
BF16 = ml_dtypes.bfloat16
FP8E4 = ml_dtypes.float8_e4m3fn
FP8E5 = ml_dtypes.float8_e5m2


def compile_kernel(family: str, kernel: str, arrays, target: str, **ct):
    path = KERNELS / f"{family}.py"
    return nkic.compile(str(path), *arrays, kernel=kernel, target=target, **ct)


def run(family: str, kernel: str, arrays, target: str = "trn2", seed: int = 0, **ct):
    """Compile `kernel` of kernels/`family`.py for `arrays` and run it on them (matmuls sum in
    contraction order: these tests pin the PE array's bits)."""
    arrays = [a for a in arrays]
    k = compile_kernel(family, kernel, arrays, target, **ct)
    return k(*arrays, seed=seed, exact_accumulation=True)


def isa(instr: str, arrays, ins: dict, outs: dict, target: str = "trn2", seed: int = 0, **attrs):
    """Run one instruction (kernels/generic.py): `ins`/`outs` are common.py operand specs."""
    named = dict(zip("abcd", arrays))
    k = nkic.compile(
        str(KERNELS / "generic.py"),
        kernel="isa",
        target=target,
        instr=instr,
        ins=ins,
        outs=outs,
        attrs=attrs,
        **named,
    )
    return k(*arrays, seed=seed, exact_accumulation=True)


def diagnostics(family: str, kernel: str, target: str = "trn2", **args):
    """The diagnostics of compiling a kernel (nkic.check takes arrays as tensor arguments)."""
    return nkic.check(str(KERNELS / f"{family}.py"), kernel=kernel, target=target, **args)


def isa_diagnostics(instr: str, arrays, ins, outs, target="trn2", **attrs):
    named = dict(zip("abcd", arrays))
    return nkic.check(
        str(KERNELS / "generic.py"),
        kernel="isa",
        target=target,
        instr=instr,
        ins=ins,
        outs=outs,
        attrs=attrs,
        **named,
    )


def bits(x: np.ndarray) -> np.ndarray:
    """The raw bits of an array (for bit-exact comparison, NaN payloads and -0 included)."""
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.dtype.itemsize}")


def assert_bits(got, want, dtype=None):
    got = np.asarray(got)
    want = np.asarray(want)
    if dtype is not None:
        want = want.astype(dtype)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    gb, wb = bits(got), bits(want)
    if not np.array_equal(gb, wb):
        bad = np.argwhere(gb != wb)[:5]
        rows = [(tuple(i), got[tuple(i)], want[tuple(i)]) for i in bad]
        raise AssertionError(f"{int((gb != wb).sum())} element(s) differ, e.g. {rows}")


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def rnd(shape, dtype=np.float32, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


targets = pytest.mark.parametrize("target", TARGETS)
