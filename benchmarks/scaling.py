"""Compile time of fully unrolled kernels: it must grow linearly with the instruction count.

`examples/matmul_tiled.py` is a tiled matmul whose loops are all plain `range` loops, which
the compiler unrolls as the official one does, so every iteration becomes its own
instruction; the shapes below give about
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

KERNEL = Path(__file__).resolve().parents[1] / "examples" / "matmul_tiled.py"
#: Compile-time Python (a tile pool object, f-string names, a settings dict, classes):
#: its loops unroll because their bodies change the pool. (R, C): (R/128)(C/512) iterations
#: of 3 instructions: about 10k, 30k and 100k instructions.
PYTHON_KERNEL = Path(__file__).resolve().parent / "kernels" / "unrolled_python.py"
PYTHON_SHAPES = ((4096, 53248), (8192, 81920), (16384, 131072))
#: (K, M, N): instructions = (M/128)(N/512)(3 K/128 + 2)
SHAPES = ((2048, 2048, 6144), (4096, 4096, 4096), (8192, 4096, 8192))
TARGET_S = 30.0


def compile_unrolled(K: int, M: int, N: int) -> tuple[int, float]:
    args = {"lhsT": TensorSpec((K, M), "bfloat16"), "rhs": TensorSpec((K, N), "bfloat16")}
    t0 = time.process_time()
    res = driver.compile_file(str(KERNEL), "matmul_tiled", args, "trn2")
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
        "`examples/matmul_tiled.py` (every loop a `range`, unrolled), bf16, trn2: "
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


#: Tile reuses of the partial-writes kernel below: 4 writes and 1 read each.
PARTIAL_REUSES = (2_000, 8_000, 20_000)


def partial_writes_kernel(reuses: int) -> str:
    """IR text of an unrolled loop that fills one tile in four column quarters and reads it
    whole, `reuses` times: no single write covers a read, their union does."""

    def window(name: str, col: int, width: int) -> str:
        return f"%{name}[{col}; [512, 128], [1, {width}]]"

    body = [
        '  %t = alloc sbuf float32[128, 512] "t" @0:1:5-1:40',
        '  %u = alloc sbuf float32[128, 512] "u" @0:2:5-2:40',
    ]
    for n in range(reuses):
        line = 3 + 5 * n
        for q in range(4):
            body.append(
                f"  memset(dst={window('t', 128 * q, 128)}, value=0.0) {{}} "
                f"@0:{line + q}:5-{line + q}:40"
            )
        body.append(
            f"  tensor_copy(dst={window('u', 0, 512)}, src={window('t', 0, 512)}) {{}} "
            f"@0:{line + 4}:5-{line + 4}:40"
        )
    return 'kernel @k target=trn2 {\n  file 0 "kernel.py"\n' + "\n".join(body) + "\n  return \n}\n"


def dataflow_scaling(lines: list[str]) -> None:
    """CPU time of the read-before-write check on reads that only a union of earlier writes
    covers (each read used to re-examine every earlier write of its tensor)."""
    from nkic.ir.parser import parse_kernel
    from nkic.passes.base import PassContext
    from nkic.passes.checks.dataflow import Dataflow

    rows = []
    for reuses in PARTIAL_REUSES:
        kernel = parse_kernel(partial_writes_kernel(reuses))
        ctx = PassContext("trn2")
        t0 = time.process_time()
        Dataflow().run(kernel, ctx)
        elapsed = time.process_time() - t0
        if ctx.sink.items:
            sys.exit("partial-writes benchmark kernel: the dataflow check reported something")
        rows.append((5 * reuses, elapsed))
    lines += [
        "## Read-before-write check on partial writes grows linearly",
        "",
        "One SBUF tile filled in four column quarters and read whole, over and over (unrolled): "
        "CPU seconds of the dataflow check alone.",
        "",
        "| instructions | check s | µs per instruction |",
        "|---|---|---|",
    ]
    for n, t in rows:
        lines.append(f"| {n:,} | {t:.2f} | {t / n * 1e6:.0f} |")
    (n0, t0), (n1, t1) = rows[0], rows[-1]
    lines += ["", f"Growth ratio ({n0:,} → {n1:,} instructions): {(t1 / t0) / (n1 / n0):.2f}.", ""]
