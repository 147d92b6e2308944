"""`make bench`: compile-time scaling, simulator speed, check speed and cost-model calibration.

Writes benchmarks/report.md. Timings are wall-clock on this machine (best of a few runs where
cheap); the calibration table compares the simulator's estimate with the published figures of
neuroncore-arch.md §12.1 (trn1, bf16, lhsT [8192, 4096], rhs [8192, 8192]).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import nkic
from nkic import driver
from nkic.frontend import TensorSpec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REPORT = ROOT / "benchmarks" / "report.md"

# (example file, kernel, published ms, published TensorE active %) — arch §12.1 / §12.2
CALIBRATION = [
    ("matmul_tiled.py", "matmul_tiled", 51.80, 87.28),
    ("matmul_hoisted.py", "matmul_hoisted", 42.96, 99.85),
    ("matmul_blocked.py", "matmul_blocked", 22.07, 99.52),
    ("matmul_blocked_mnk.py", "matmul_blocked_mnk", 6.97, 99.50),
]


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def matmul_args(K: int, M: int, N: int, dtype: str = "bfloat16") -> dict:
    return {"lhsT": TensorSpec((K, M), dtype), "rhs": TensorSpec((K, N), dtype)}


def compile_or_die(path: Path, kernel: str, args: dict, target: str):
    res = driver.compile_file(str(path), kernel, args, target)
    if not res.ok:
        from nkic.diagnostics import render_text

        sys.exit(f"benchmark kernel {kernel} failed to compile:\n{render_text(res.diagnostics)}")
    return res


def compile_scaling(lines: list[str]) -> None:
    import nkirt

    lines += [
        "## Compile time does not grow with trip counts",
        "",
        "`examples/matmul_tiled.py`, bf16, trn2: specialise + passes + neff.",
        "",
        "| shape (lhsT, rhs) | instruction instances | compile s | IR lines | neff bytes |",
        "|---|---|---|---|---|",
    ]
    for K, M, N in ((1024, 512, 1024), (8192, 4096, 8192)):
        args = matmul_args(K, M, N)
        t, res = timed(
            lambda a=args: compile_or_die(EXAMPLES / "matmul_tiled.py", "matmul_tiled", a, "trn2"),
            3,
        )

        prog = nkirt.load(res.neff)
        lines.append(
            f"| [{K},{M}] x [{K},{N}] | {prog.instance_count:,} | {t:.3f} | "
            f"{res.ir_text.count(chr(10))} | {len(res.neff):,} |"
        )
    lines.append("")


def simulator_speed(lines: list[str]) -> None:
    import nkirt

    lines += [
        "## Simulator speed",
        "",
        "| mode | kernel | instruction instances | wall s | instances/s |",
        "|---|---|---|---|---|",
    ]
    big = compile_or_die(
        EXAMPLES / "matmul_tiled.py", "matmul_tiled", matmul_args(8192, 4096, 8192), "trn1"
    )
    prog = nkirt.load(big.neff)
    t, res = timed(lambda: nkirt.execute(prog, {}, timing_only=True))
    n = res.profile["instructions"]
    lines.append(
        f"| timing-only | matmul_tiled [8192,4096]x[8192,8192] bf16 | {n:,} | {t:.2f} | {n / t:,.0f} |"
    )
    small = compile_or_die(
        EXAMPLES / "matmul_tiled.py", "matmul_tiled", matmul_args(1024, 512, 2048), "trn1"
    )
    prog = nkirt.load(small.neff)
    t, res = timed(lambda: nkirt.execute(prog, {}, seed=0))
    n = res.profile["instructions"]
    lines.append(
        f"| functional | matmul_tiled [1024,512]x[1024,2048] bf16 | {n:,} | {t:.2f} | {n / t:,.0f} |"
    )
    lines.append("")


def check_speed(lines: list[str]) -> None:
    path = EXAMPLES / "matmul_blocked_mnk.py"
    args = matmul_args(8192, 4096, 8192)
    t, diags = timed(lambda: nkic.check(path, "matmul_blocked_mnk", "trn1", **args), 3)
    errors = [d for d in diags if d.severity == "error"]
    lines += [
        "## `nkic check` speed",
        "",
        f"`examples/matmul_blocked_mnk.py` at [8192,4096] x [8192,8192] (trn1): "
        f"{t * 1000:.0f} ms, {len(errors)} errors (target: well under one second).",
        "",
    ]


def calibration(lines: list[str]) -> None:
    import nkirt

    lines += [
        "## Cost-model calibration (trn1, bf16, [4096,8192] @ [8192,8192])",
        "",
        "Published: neuroncore-arch.md §12.1 latencies and §12.2 TensorE-active percentages. "
        "No constant was fitted to these kernels.",
        "",
        "| kernel | published ms | predicted ms | error | TensorE active published | predicted | DMA active predicted |",
        "|---|---|---|---|---|---|---|",
    ]
    for file, kernel, ms, pe in CALIBRATION:
        res = compile_or_die(EXAMPLES / file, kernel, matmul_args(8192, 4096, 8192), "trn1")
        run = nkirt.execute(nkirt.load(res.neff), {}, timing_only=True)
        prof = run.profile
        pred = prof["total_ns"] / 1e6
        tensor = 100 * prof["engines"]["tensor"]["busy_ns"] / prof["total_ns"]
        dma = 100 * prof["engines"]["dma"]["busy_ns"] / prof["total_ns"]
        err = (pred - ms) / ms * 100
        lines.append(
            f"| {kernel} | {ms:.2f} | {pred:.2f} | {err:+.1f}% | {pe:.2f}% | {tensor:.1f}% | {dma:.1f}% |"
        )
    lines.append("")


def main() -> int:
    np.seterr(all="ignore")
    lines = [
        "# nkic benchmarks",
        "",
        f"Generated by `make bench` on {time.strftime('%Y-%m-%d')}.",
        "",
    ]
    for section in (compile_scaling, simulator_speed, check_speed, calibration):
        t0 = time.perf_counter()
        section(lines)
        print(f"{section.__name__}: {time.perf_counter() - t0:.1f} s", flush=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"wrote {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
