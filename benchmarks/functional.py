"""Functional simulation against the numpy floor: the same tile mathematics written directly
in numpy (same tiles, same fp32 arithmetic and roundings, one BLAS thread as the simulator
uses), measured in the same process. The ratio is what the simulator's bookkeeping costs
(operand views, init tracking, hazard checks, timing) on top of the arithmetic itself.

Each case runs in a fresh subprocess (`python benchmarks/functional.py CASE REPEAT` prints
its measurements as JSON), so no case inherits another's memory or caches.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
from threadpoolctl import threadpool_limits

BF16 = ml_dtypes.bfloat16
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def matmul_floor(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """examples/matmul_tiled.py in numpy: [128, 512] fp32 PSUM tiles accumulated over K."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = np.empty((M, N), BF16)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = np.zeros((128, 512), np.float32)
            for k in range(K // 128):
                s = lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128].astype(np.float32)
                mv = rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512].astype(np.float32)
                acc += np.matmul(s.T, mv)
            out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512] = acc.astype(BF16)
    return out


def add_floor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """examples/tiled_add.py in numpy: one 128-row tile at a time, fp32 arithmetic."""
    out = np.empty_like(a)
    for i in range(a.shape[0] // 128):
        rows = slice(i * 128, (i + 1) * 128)
        out[rows] = (a[rows].astype(np.float32) + b[rows].astype(np.float32)).astype(a.dtype)
    return out


def _rss_kib(field: str) -> int | None:
    """A line of /proc/self/status in KiB (None where there is no procfs)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_growth(fn):
    """(fn(), how far the process's resident memory rose above its level before the call, in
    bytes; None where Linux cannot reset the peak: /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM (the peak RSS) to the current RSS
    except OSError:
        return fn(), None
    before = _rss_kib("VmRSS")
    out = fn()
    peak = _rss_kib("VmHWM")
    return out, None if before is None or peak is None else (peak - before) * 1024


#: name -> (kernel, shape of the first input, shape of the second, numpy floor, repeats)
CASES = {
    "matmul": ("matmul_tiled", (2048, 1024), (2048, 2048), matmul_floor, 7),
    "elementwise": ("tiled_add", (8192, 2048), (8192, 2048), add_floor, 7),
    "matmul (README big)": ("matmul_tiled", (8192, 4096), (8192, 8192), matmul_floor, 2),
}


def timed_pairs(simulate, floor, repeat: int) -> dict[str, list[float]]:
    """Wall and CPU times of the simulator and of the numpy floor, called alternately:
    `repeat` pairs after one warm-up pair that is not counted (imports, first touch of pages,
    the memory pool). Alternating puts both under the same load of the machine, so the ratio
    of a pair varies less than either time."""
    times: dict[str, list[float]] = {"sim": [], "sim_cpu": [], "np": [], "np_cpu": []}
    for i in range(repeat + 1):
        for key, fn in (("sim", simulate), ("np", floor)):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            if i:
                times[key].append(time.perf_counter() - w0)
                times[key + "_cpu"].append(time.process_time() - c0)
    return times


def measure(case: str, repeat: int) -> dict:
    """One case, in this (fresh) process: times, instance count, whether the outputs equal the
    floor's, and the peak-RSS growth of the first (warm-up) simulation."""
    import nkirt

    from nkic import driver
    from nkic.frontend import TensorSpec

    kernel, a_shape, b_shape, floor, _ = CASES[case]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape, dtype=np.float32).astype(BF16)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(BF16)
    names = ("lhsT", "rhs") if kernel == "matmul_tiled" else ("a", "b")
    args = {n: TensorSpec(x.shape, "bfloat16") for n, x in zip(names, (a, b))}
    res = driver.compile_file(str(EXAMPLES / f"{kernel}.py"), kernel, args, "trn2")
    if not res.ok:
        sys.exit(f"benchmark kernel {kernel} failed to compile")
    program = nkirt.load(res.neff)
    inputs = dict(zip(names, (a, b)))
    run, growth = peak_rss_growth(lambda: nkirt.execute(program, inputs))

    def floor_once():
        # one BLAS thread, as the simulator limits itself to on each run
        with threadpool_limits(limits=1, user_api="blas"):
            return floor(a, b)

    want = floor_once()
    times = timed_pairs(lambda: nkirt.execute(program, inputs), floor_once, repeat)
    (got,) = run.outputs.values()
    equal = np.array_equal(got.view(np.uint16), want.view(np.uint16))
    diff = float(np.max(np.abs(got.astype(np.float32) - want.astype(np.float32))))
    own = sum(t.nbytes for t in program.tensors.values() if not t.on_chip)
    out_bytes = sum(t.nbytes for t in program.outputs)
    return {
        "times": times,
        "instances": run.profile["instructions"],
        "equal": equal,
        "max_diff": diff,
        "rss_growth": growth,
        "own_bytes": own,
        "output_bytes": out_bytes,
    }


#: glibc's allocator keeps freed blocks up to 64 MiB instead of returning them to the system:
#: without this, whether numpy's temporaries fault in fresh pages on every use depends on the
#: allocator's heuristics in that process, and the floor's own time varied 3x from one process
#: to the next. Both sides of every pair run with it.
STEADY_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def _in_subprocess(case: str, repeat: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, case, str(repeat)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **STEADY_MALLOC},
    )
    if done.returncode:
        sys.exit(f"functional benchmark {case!r} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def functional_speed(lines: list[str], compile_or_die=None, big: bool = True) -> None:
    """The report section. (`compile_or_die` is accepted for run.py's calling convention; the
    subprocesses compile for themselves.)"""
    lines += [
        "## Functional simulation against the numpy floor",
        "",
        "bf16, trn2, default (BLAS) accumulation. Floor: the same tiles in numpy "
        "(`benchmarks/functional.py`). Target: within 3x of the floor; the big matmul in under "
        "30 s. Method: each kernel runs in a fresh subprocess, which times the simulator and its "
        "floor alternately, one warm-up pair not counted and then *n* pairs; the ratio of each "
        "pair (simulator ÷ floor, wall time) is reported as the median, the minimum and the "
        "spread (max − min). Alternating puts both under the same load of a shared machine. The "
        "subprocess runs with glibc's `MALLOC_MMAP_THRESHOLD_=64 MiB` and "
        "`MALLOC_TRIM_THRESHOLD_=256 MiB`, so that neither side's time depends on whether the "
        "allocator hands back fresh pages for temporaries.",
        "",
        "| kind | kernel | shapes | instances | pairs | simulator s (median) | floor s (median) "
        "| ratio median | ratio min | spread | CPU ratio median | outputs equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    memory_note = ""
    for case, (kernel, a_shape, b_shape, _, repeat) in CASES.items():
        if case == "matmul (README big)" and not big:
            continue
        m = _in_subprocess(case, repeat)
        t = m["times"]
        ratios = [s / f for s, f in zip(t["sim"], t["np"])]
        cpu = [s / f for s, f in zip(t["sim_cpu"], t["np_cpu"])]
        equal = "bit-identical" if m["equal"] else f"max diff {m['max_diff']:.3g}"
        lines.append(
            f"| {case} | {kernel} | {list(a_shape)} x {list(b_shape)} | {m['instances']:,} | "
            f"{repeat} | {statistics.median(t['sim']):.3f} | {statistics.median(t['np']):.3f} | "
            f"{statistics.median(ratios):.2f}x | {min(ratios):.2f}x | "
            f"{max(ratios) - min(ratios):.2f} | {statistics.median(cpu):.2f}x | {equal} |"
        )
        if case == "matmul (README big)" and m["rss_growth"] is not None:
            own, out_bytes = m["own_bytes"], m["output_bytes"]
            memory_note = (
                f"Memory of the big matmul: its first run raised the process's peak RSS by "
                f"{m['rss_growth'] / 2**20:.0f} MiB; the kernel's own tensors are "
                f"{own / 2**20:.0f} MiB ({(own - out_bytes) / 2**20:.0f} MiB of inputs the caller "
                f"holds, {out_bytes / 2**20:.0f} MiB of output). Target: at most the kernel's "
                "tensors."
            )
    lines.append("")
    if memory_note:
        lines += [memory_note, ""]


if __name__ == "__main__":
    np.seterr(all="ignore")
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
