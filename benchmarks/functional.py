"""Functional simulation against the numpy floor: the same tile mathematics written directly
in numpy (same tiles, same fp32 arithmetic and roundings, one BLAS thread as the simulator
uses), measured in the same process. The ratio is what the simulator's bookkeeping costs
(operand views, init tracking, hazard checks, timing) on top of the arithmetic itself.
"""

from __future__ import annotations

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


def timed_both(fn, repeat: int):
    """(best wall time, best CPU time of this process, fn()) over `repeat` calls. The CPU time
    is what a busy machine (other processes on the same cores) distorts least."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def functional_speed(lines: list[str], compile_or_die, big: bool = True) -> None:
    """`compile_or_die` comes from run.py."""
    import nkirt

    from nkic.frontend import TensorSpec

    rng = np.random.default_rng(0)
    cases = [
        ("matmul", "matmul_tiled", (2048, 1024), (2048, 2048), matmul_floor, 3),
        ("elementwise", "tiled_add", (8192, 2048), (8192, 2048), add_floor, 3),
    ]
    if big:
        cases.append(
            ("matmul (README big)", "matmul_tiled", (8192, 4096), (8192, 8192), matmul_floor, 1)
        )
    lines += [
        "## Functional simulation against the numpy floor",
        "",
        "bf16, trn2, default (BLAS) accumulation. Floor: the same tiles in numpy "
        "(`benchmarks/functional.py`). Target: within 3x of the floor; the big matmul in under 30 s. "
        "Best of the repeats, wall and CPU time (the CPU ratio is the one other processes on the "
        "machine distort least).",
        "",
        "| kind | kernel | shapes | instances | simulator s | numpy floor s | ratio | CPU s "
        "(simulator / floor) | CPU ratio | outputs equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    memory_note = ""
    for kind, kernel, a_shape, b_shape, floor, repeat in cases:
        a = rng.standard_normal(a_shape, dtype=np.float32).astype(BF16)
        b = rng.standard_normal(b_shape, dtype=np.float32).astype(BF16)
        names = ("lhsT", "rhs") if kernel == "matmul_tiled" else ("a", "b")
        args = {n: TensorSpec(x.shape, "bfloat16") for n, x in zip(names, (a, b))}
        res = compile_or_die(EXAMPLES / f"{kernel}.py", kernel, args, "trn2")
        program = nkirt.load(res.neff)
        inputs = dict(zip(names, (a, b)))
        (t_sim, c_sim, run), growth = peak_rss_growth(
            lambda p=program, i=inputs, r=repeat: timed_both(lambda: nkirt.execute(p, i), r)
        )
        if kind == "matmul (README big)" and growth is not None:
            own = sum(t.nbytes for t in program.tensors.values() if not t.on_chip)
            out_bytes = sum(t.nbytes for t in program.outputs)
            memory_note = (
                f"Memory of the big matmul: the run raised the process's peak RSS by "
                f"{growth / 2**20:.0f} MiB; the kernel's own tensors are {own / 2**20:.0f} MiB "
                f"({(own - out_bytes) / 2**20:.0f} MiB of inputs the caller holds, "
                f"{out_bytes / 2**20:.0f} MiB of output). Target: at most the kernel's tensors."
            )
        with threadpool_limits(limits=1, user_api="blas"):
            t_np, c_np, want = timed_both(lambda f=floor, x=a, y=b: f(x, y), repeat)
        (got,) = run.outputs.values()
        equal = (
            "bit-identical"
            if np.array_equal(got.view(np.uint16), want.view(np.uint16))
            else (
                f"max diff {np.max(np.abs(got.astype(np.float32) - want.astype(np.float32))):.3g}"
            )
        )
        lines.append(
            f"| {kind} | {kernel} | {list(a_shape)} x {list(b_shape)} | "
            f"{run.profile['instructions']:,} | {t_sim:.2f} | {t_np:.2f} | {t_sim / t_np:.1f}x | "
            f"{c_sim:.2f} / {c_np:.2f} | {c_sim / c_np:.1f}x | {equal} |"
        )
    lines.append("")
    if memory_note:
        lines += [memory_note, ""]
