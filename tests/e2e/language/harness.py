"""Compile a kernel of kernels/ both ways — symbolic loops (`nkic.compile`) and every loop
unrolled (`driver.compile_file(unroll_all=True)`) — run both on the simulator and check that
they agree exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic
from nkic import driver
from nkic.api import CompiledKernel, _tensor_args
from nkic.diagnostics import CompileError

KERNELS = Path(__file__).resolve().parent / "kernels"


def compile_unrolled(path: Path, kernel: str, **args) -> CompiledKernel:
    named = _tensor_args(args)
    res = driver.compile_file(str(path), kernel, named, unroll_all=True)
    if not res.ok:
        raise CompileError(res.diagnostics)
    return CompiledKernel(res.neff, res.ir_text, res.asm)


def run(file: str, kernel: str, loops: int | None = None, **args):
    """The outputs of `kernel` in kernels/<file> for `args` (arrays by parameter name, and
    compile-time values), identical through the symbolic and the unrolled paths. `loops`, when
    given, is the number of loops the symbolic path must keep in the IR."""
    path = KERNELS / file
    arrays = {k: v for k, v in args.items() if isinstance(v, np.ndarray)}
    symbolic = nkic.compile(str(path), kernel=kernel, **args)
    unrolled = compile_unrolled(path, kernel, **args)
    assert ir_loops(unrolled.ir) == 0
    if loops is not None:
        assert ir_loops(symbolic.ir) == loops, symbolic.ir
    got, again = symbolic(**arrays), unrolled(**arrays)
    got_t = got if isinstance(got, tuple) else (got,)
    again_t = again if isinstance(again, tuple) else (again,)
    assert len(got_t) == len(again_t)
    for a, b in zip(got_t, again_t):
        np.testing.assert_array_equal(a, b, err_msg="symbolic and unrolled loops disagree")
    return got


def rand(shape, dtype=np.float32, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def ir_loops(ir: str) -> int:
    return sum(1 for line in ir.splitlines() if line.lstrip().startswith("for $"))
