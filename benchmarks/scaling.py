"""Compile time of fully unrolled kernels: it must grow linearly with the instruction count.

`benchmarks/kernels/unrolled_matmul.py` is a tiled matmul whose loops are all
`nl.static_range`, so every iteration becomes its own instruction; the shapes below give about
10k, 30k and 100k instructions. `benchmarks/kernels/unrolled_python.py` unrolls as many through
compile-time Python (objects, f-strings, dicts), which the specialiser interprets per iteration. The time is the whole `compile_file` (specialise, checks,
allocation, scheduling, neff), CPU time of this process (the wall clock on a shared machine
also counts other processes).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from nkic import driver
from nkic.frontend import TensorSpec

KERNEL = Path(__file__).resolve().parent / "kernels" / "unrolled_matmul.py"
#: Compile-time Python (a tile pool object, f-string names, a settings dict, classes):
#: its loops unroll because their bodies change the pool. (R, C): (R/128)(C/512) iterations
#: of 3 instructions: about 10k, 30k and 100k instructions.
PYTHON_KERNEL = KERNEL.with_name("unrolled_python.py")
PYTHON_SHAPES = ((4096, 53248), (8192, 81920), (16384, 131072))
#: (K, M, N): instructions = (M/128)(N/512)(3 K/128 + 2)
SHAPES = ((2048, 2048, 6144), (4096, 4096, 4096), (8192, 4096, 8192))
TARGET_S = 30.0


def compile_unrolled(K: int, M: int, N: int) -> tuple[int, float]:
    args = {"lhsT": TensorSpec((K, M), "bfloat16"), "rhs": TensorSpec((K, N), "bfloat16")}
    t0 = time.process_time()
    res = driver.compile_file(str(KERNEL), "unrolled_matmul", args, "trn2")
    elapsed = time.process_time() - t0
    if not res.ok:
        sys.exit(f"unrolled benchmark kernel failed to compile at {(K, M, N)}")
    return (M // 128) * (N // 512) * (3 * K // 128 + 2), elapsed


def compile_python_heavy(R: int, C: int) -> tuple[int, float, float]:
    """(instructions, specialise CPU s, whole compile CPU s) of the compile-time-Python kernel."""
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    args = {"x": TensorSpec((R, C), "bfloat16")}
    t0 = time.process_time()
    ir = specialise(str(PYTHON_KERNEL), "unrolled_python", dict(args), "trn2", DiagnosticSink())
    frontend = time.process_time() - t0
    t0 = time.process_time()
    res = driver.compile_file(str(PYTHON_KERNEL), "unrolled_python", args, "trn2")
    elapsed = time.process_time() - t0
    if ir is None or not res.ok:
        sys.exit(f"compile-time Python benchmark kernel failed to compile at {(R, C)}")
    return sum(1 for _ in ir.instructions()), frontend, elapsed


def unrolled_scaling(lines: list[str]) -> None:
    compile_unrolled(128, 128, 512)  # imports and one-time set-up are not part of the growth
    rows = [compile_unrolled(*shape) for shape in SHAPES]
    lines += [
        "## Compile time of fully unrolled kernels grows linearly",
        "",
        "`benchmarks/kernels/unrolled_matmul.py` (every loop `nl.static_range`), bf16, trn2: "
        "`compile_file` CPU seconds (specialise, checks, allocation, scheduling, neff).",
        "",
        "| [K, M] x [K, N] | instructions | compile s | µs per instruction |",
        "|---|---|---|---|",
    ]
    for (K, M, N), (n, t) in zip(SHAPES, rows):
        lines.append(f"| [{K},{M}] x [{K},{N}] | {n:,} | {t:.1f} | {t / n * 1e6:.0f} |")
    (n0, t0), (n1, t1) = rows[0], rows[-1]
    growth = (t1 / t0) / (n1 / n0)
    verdict = "met" if t1 < TARGET_S else "NOT met"
    lines += [
        "",
        f"Growth ratio (time ratio ÷ instruction ratio, {n0:,} → {n1:,}): {growth:.2f} "
        "(1.0 is linear). Target: 100k instructions in under "
        f"{TARGET_S:.0f} s — {verdict} ({t1:.1f} s). Load average while measuring: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (CPU time grows on a busy machine).",
        "",
    ]
    compile_python_heavy(256, 1024)
    heavy = [compile_python_heavy(*shape) for shape in PYTHON_SHAPES]
    lines += [
        "Compile-time Python: `benchmarks/kernels/unrolled_python.py` (a tile pool object "
        "handing out tiles by f-string names, a settings dict, a small class hierarchy choosing "
        "each step, helper functions for the slices; every loop unrolls), bf16, trn2: CPU "
        "seconds of specialisation alone and of the whole `compile_file`.",
        "",
        "| x | instructions | specialise s | compile s | µs per instruction |",
        "|---|---|---|---|---|",
    ]
    for (R, C), (n, front, t) in zip(PYTHON_SHAPES, heavy):
        lines.append(f"| [{R},{C}] | {n:,} | {front:.1f} | {t:.1f} | {t / n * 1e6:.0f} |")
    (n0, _, t0), (n1, _, t1) = heavy[0], heavy[-1]
    lines += [
        "",
        f"Growth ratio ({n0:,} → {n1:,} instructions): {(t1 / t0) / (n1 / n0):.2f}.",
        "",
    ]
