"""`nkic sweep` scaling: the same 192-point timing sweep of examples/matmul_blocked.py on 1 and
2 local worker processes (and on a local Ray instance with 2 CPUs when Ray is installed):
points per second and the speed-up."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from nkic import sweep

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "matmul_blocked.py"

# 4 TILES_M x 3 TILES_N x 8 shapes x 2 targets = 192 points
SPEC = f"""
run = "timing"
targets = ["trn1", "trn2"]

[[kernel]]
file = "{EXAMPLE}"
kernel = "matmul_blocked"
params = {{ TILES_M = [1, 2, 4, 8], TILES_N = [1, 2, 4] }}
shapes = [
{
    ",".join(
        f'{{ lhsT = "bfloat16[{k},1024]", rhs = "bfloat16[{k},{n}]" }}'
        for k in (128, 256, 512, 1024)
        for n in (2048, 4096)
    )
}
]
"""


def _timed(run) -> tuple[float, list[dict]]:
    rows: list[dict] = []
    t0 = time.perf_counter()
    run(rows.append)
    return time.perf_counter() - t0, rows


def sweep_scaling(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.toml"
        spec.write_text(SPEC)
        points = sweep.load_spec(spec)
        runs = {}
        for jobs in (1, 2):
            runs[f"{jobs} process{'es' if jobs > 1 else ''}"] = _timed(
                lambda emit, jobs=jobs: sweep.run_local(points, jobs, emit)
            )
        ray_note = "Ray: not installed (`pip install 'nkic[ray]'`), not measured."
        try:
            import ray
        except ImportError:
            ray = None
        if ray is not None:
            ray.init(num_cpus=2, include_dashboard=False, runtime_env={"working_dir": tmp})
            try:
                runs["Ray, 2 CPUs (local)"] = _timed(
                    lambda emit: sweep.run_ray(points, None, tmp, emit)
                )
            finally:
                ray.shutdown()
            ray_note = "Ray: a local instance started with `num_cpus=2` (start-up not timed)."
    base, _ = runs["1 process"]
    ok = {name: sum(r["status"] == "ok" for r in rows) for name, (_, rows) in runs.items()}
    lines += [
        "## `nkic sweep` scaling",
        "",
        f"{len(points)} timing-only points of `examples/matmul_blocked.py` (TILES_M x TILES_N x "
        f"8 bf16 shapes x trn1, trn2), {os.cpu_count()} CPUs. {ray_note}",
        "",
        "| execution | points ok | wall s | points/s | speed-up |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, (t, rows) in runs.items():
        lines.append(
            f"| {name} | {ok[name]}/{len(rows)} | {t:.1f} | {len(rows) / t:.1f} | {base / t:.2f}x |"
        )
    lines.append("")


if __name__ == "__main__":
    out: list[str] = []
    sweep_scaling(out)
    print("\n".join(out))
