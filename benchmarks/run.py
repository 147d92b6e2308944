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

# (example file, kernel, compile-time parameters, published ms, published §12.2 DMA / TensorE
# active %). The parameters are those of the published kernels (arch §12.1; the tutorial code
# `matrix_multiplication_nki_kernels.py@1db4d74e`): Opt 2 blocks TILES_M = TILES_N = 2, Opt 3
# TILES_M = 16, TILES_N = 2, TILES_K = 8 with `result_tiles` of `dtype=lhsT.dtype` (bf16 partial
# sums; arch §12.1's SBUF budget, "results 4 MB × (M/2048)", is 2 bytes per element too).
CALIBRATION = [
    ("matmul_tiled.py", "matmul_tiled", {}, 51.80, (99.93, 87.28)),
    ("matmul_hoisted.py", "matmul_hoisted", {}, 42.96, (99.73, 99.85)),
    ("matmul_blocked.py", "matmul_blocked", {"TILES_M": 2, "TILES_N": 2}, 22.07, (95.70, 99.52)),
    (
        "matmul_blocked_mnk.py",
        "matmul_blocked_mnk",
        {"TILES_M": 16, "TILES_N": 2, "TILES_K": 8, "SUMS_DTYPE": "bfloat16"},
        6.97,
        (21.54, 99.50),
    ),
]
#: Not a published configuration: the example's default fp32 partial sums (reported only).
FP32_SUMS = (
    "matmul_blocked_mnk.py",
    "matmul_blocked_mnk",
    {"TILES_M": 16, "TILES_N": 2, "TILES_K": 8},
)
TOLERANCE = 0.15


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


def _simulate_calibration(file: str, kernel: str, params: dict, ideal_waits: bool = False):
    import nkirt

    args = {**matmul_args(8192, 4096, 8192), **params}
    res = compile_or_die(EXAMPLES / file, kernel, args, "trn1")
    program = nkirt.load(res.neff)
    return nkirt.execute(program, {}, timing_only=True, ideal_waits=ideal_waits).profile


def calibration(lines: list[str]) -> None:
    lines += [
        "## Cost-model calibration (trn1, bf16, [4096,8192] @ [8192,8192])",
        "",
        "Published: neuroncore-arch.md §12.1 latencies (Trn1, P99) and §12.2 engine-active "
        "percentages (device not stated; the profiler's *active* counts an engine with an "
        "instruction in flight, so it is not the same measure as our *busy*). Predicted: "
        "`nkirt` timing-only run of our `examples/` versions compiled by nkic for trn1. No "
        "constant was fitted to these kernels (docs/cost-model.md, calibration notes). *Ideal "
        "waits*: the same program with every semaphore wait replaced by a wait for exactly the "
        "conflicting earlier accesses (`nkirt.execute(..., ideal_waits=True)`), i.e. what "
        "per-tile semaphores from the backend would give.",
        "",
        "| kernel | params | published ms | predicted ms | error | within ±15% | ideal waits ms (error) | DMA GB/s published (bytes / published ms) | DMA GB/s predicted | TensorE busy predicted | DMA active published / busy predicted | TensorE active published |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    outside, ideal_ok, rates = [], [], []
    for file, kernel, params, ms, (dma_pub, pe_pub) in CALIBRATION:
        prof = _simulate_calibration(file, kernel, params)
        ideal = _simulate_calibration(file, kernel, params, ideal_waits=True)["total_ns"] / 1e6
        rates.append(prof["dma_bytes"] / (ms * 1e6))
        total = prof["total_ns"]
        pred = total / 1e6
        err = (pred - ms) / ms
        tensor = 100 * prof["engines"]["tensor"]["busy_ns"] / total
        dma = 100 * prof["engines"]["dma"]["busy_ns"] / total
        shown = ", ".join(f"{k}={v}" for k, v in params.items() if k != "SUMS_DTYPE")
        if "SUMS_DTYPE" in params:
            shown += f", {params['SUMS_DTYPE']} sums"
        if abs(err) > TOLERANCE:
            outside.append(kernel)
            if abs(ideal - ms) / ms <= TOLERANCE:
                ideal_ok.append(kernel)
        lines.append(
            f"| {kernel} | {shown or '—'} | {ms:.2f} | {pred:.2f} | {err * 100:+.1f}% | "
            f"{'yes' if abs(err) <= TOLERANCE else 'no'} | "
            f"{ideal:.2f} ({(ideal - ms) / ms * 100:+.1f}%) | {prof['dma_bytes'] / (ms * 1e6):.0f} | "
            f"{prof['dma_bandwidth_gbps']:.0f} | {tensor:.1f}% | {dma_pub:.2f}% / {dma:.1f}% | "
            f"{pe_pub:.2f}% |"
        )
    file, kernel, params = FP32_SUMS
    prof = _simulate_calibration(file, kernel, params)
    lines.append("")
    if outside:
        lines.append(f"Outside ±{TOLERANCE:.0%}: {', '.join(outside)}.")
    if ideal_ok:
        lines.append(
            f"Within ±{TOLERANCE:.0%} with ideal waits: {', '.join(ideal_ok)} — the gap is the "
            "granularity of the backend's semaphore waits (one wait per static instruction on "
            "the most recent instance; docs/cost-model.md, calibration notes)."
        )
    if set(outside) - set(ideal_ok):
        lines.append(
            "The published latencies of all four kernels equal the bytes each moves by DMA at "
            f"{min(rates):.0f}–{max(rates):.0f} GB/s, below every documented DMA/HBM rate; the "
            "model does not charge the tiled kernel's extra loads, which run on a DMA queue of "
            "their own (docs/cost-model.md, calibration notes)."
        )
    lines += [
        "",
        f"Not a published configuration: `{kernel}` with the example's default fp32 partial "
        f"sums predicts {prof['total_ns'] / 1e6:.2f} ms. The 128 KiB/partition fp32 "
        "accumulator leaves no SBUF of the 176 KiB for a second copy of the K blocks, so their "
        "loads cannot overlap the matmuls.",
        "",
    ]


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
