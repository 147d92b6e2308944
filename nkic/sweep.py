"""`nkic sweep`: compile and run a kernel over a grid of compile-time parameters, shapes,
targets and LNC degrees, one independent point per task, and tabulate the results.

A spec (TOML, docs/sweep.md) lists `[[kernel]]` tables; every combination of their `shapes`,
`params`, `targets` and `lnc` is one point. A point never stops the sweep: its diagnostics,
mismatch or crash are recorded in its row. Rows are JSON lines keyed by a stable hash of the
point, so a results file that already holds a point's row makes the sweep skip it (resume).
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import hashlib
import importlib.util
import itertools
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .passes.base import collect_cycles

RUNS = ("check", "compile", "timing", "functional")
_KERNEL_KEYS = {"file", "kernel", "run", "shapes", "params", "targets", "lnc", "reference"}
_KERNEL_KEYS |= {"rtol", "atol"}


class SpecError(ValueError):
    """A sweep spec that cannot be read: the message is one line naming the problem."""


@dataclass(frozen=True)
class Point:
    """One configuration: a kernel file and name, tensor shapes (`--arg` specs), compile-time
    parameters, target, LNC degree and what to run."""

    file: str
    kernel: str
    shapes: dict
    params: dict
    target: str
    lnc: int
    run: str
    reference: str = ""
    rtol: float = 1e-2
    atol: float = 1e-2
    spec_dir: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """A stable hash of everything that defines the point (not where the spec lives)."""
        d = asdict(self)
        d.pop("spec_dir")
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_spec(path: str | Path) -> list[Point]:
    """Every point of the spec at `path`, in order; raises SpecError on a malformed spec."""
    from .frontend.args import parse_arg_spec
    from .ir.target import TARGET_NAMES

    path = Path(path)
    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecError(f"cannot read {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: invalid TOML: {e}") from None
    kernels = spec.get("kernel")
    if not isinstance(kernels, list) or not kernels:
        raise SpecError(f"{path}: no [[kernel]] tables")
    base = path.resolve().parent
    points: list[Point] = []
    for i, k in enumerate(kernels, 1):
        where = f"{path}: [[kernel]] #{i}"
        unknown = sorted(set(k) - _KERNEL_KEYS)
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}")
        for key in ("file", "kernel"):
            if not isinstance(k.get(key), str):
                raise SpecError(f"{where}: `{key}` must be a string")
        if not (base / k["file"]).is_file():
            raise SpecError(f"{where}: no such kernel file {k['file']!r}")
        run = k.get("run", spec.get("run", "timing"))
        if run not in RUNS:
            raise SpecError(f"{where}: run must be one of {', '.join(RUNS)}, got {run!r}")
        reference = k.get("reference", "")
        if run == "functional" and not _is_reference(reference):
            raise SpecError(f"{where}: functional runs need reference = 'module:function'")
        if reference and not (base / f"{reference.partition(':')[0]}.py").is_file():
            raise SpecError(f"{where}: no reference module {reference.partition(':')[0]}.py")
        targets = _list(k.get("targets", spec.get("targets", ["trn2"])), where, "targets")
        for t in targets:
            if t not in TARGET_NAMES:
                raise SpecError(f"{where}: unknown target {t!r} ({', '.join(TARGET_NAMES)})")
        lncs = _list(k.get("lnc", spec.get("lnc", [1])), where, "lnc")
        if any(n not in (1, 2) for n in lncs):
            raise SpecError(f"{where}: lnc values must be 1 or 2")
        shapes = _list(k.get("shapes", [{}]), where, "shapes")
        for s in shapes:
            if not isinstance(s, dict):
                raise SpecError(f"{where}: each shapes entry is a table NAME = 'dtype[d0,...]'")
            for name, text in s.items():
                try:
                    parse_arg_spec(str(text))
                except ValueError as e:
                    raise SpecError(f"{where}: shapes {name}: {e}") from None
        params = k.get("params", {})
        if not isinstance(params, dict):
            raise SpecError(f"{where}: `params` must be a table NAME = [values]")
        names = sorted(params)
        grids = [_list(params[n], where, f"params.{n}") for n in names]
        for shape, values, target, lnc in itertools.product(
            shapes, itertools.product(*grids), targets, lncs
        ):
            points.append(
                Point(
                    k["file"],
                    k["kernel"],
                    {n: str(v) for n, v in shape.items()},
                    dict(zip(names, values)),
                    target,
                    lnc,
                    run,
                    reference,
                    float(k.get("rtol", 1e-2)),
                    float(k.get("atol", 1e-2)),
                    str(base),
                )
            )
    return points


def _list(value, where: str, key: str) -> list:
    if not isinstance(value, list) or not value:
        raise SpecError(f"{where}: `{key}` must be a non-empty list")
    return value


def _is_reference(text) -> bool:
    mod, sep, fn = str(text).partition(":")
    return bool(sep) and mod.isidentifier() and fn.isidentifier()


def run_point(point: Point) -> dict:
    """The result row of one point. Diagnostics, mismatches and run faults are recorded in
    the row; only a crash of the process itself escapes."""
    import warnings

    import numpy as np

    import nkic
    from nkic.diagnostics import CompileError
    from nkic.frontend.args import parse_arg_spec

    row = row_head(point)
    path = str(Path(point.spec_dir) / point.file)
    tensors = {n: parse_arg_spec(s) for n, s in point.shapes.items()}
    options = dict(target=point.target, lnc=point.lnc)
    t0 = time.perf_counter()
    try:
        if point.run == "check":
            diags = nkic.check(path, point.kernel, **options, **tensors, **point.params)
            row["compile_s"] = time.perf_counter() - t0
            _diagnostics(row, [d for d in diags if d.severity == "error"])
            return row
        kernel = nkic.compile(path, kernel=point.kernel, **options, **tensors, **point.params)
    except CompileError as e:
        row["compile_s"] = time.perf_counter() - t0
        _diagnostics(row, e.diagnostics)
        return row
    row["compile_s"] = time.perf_counter() - t0
    if point.run == "compile":
        row["status"] = "ok"
        return row
    rng = np.random.default_rng(0)
    inputs = {
        n: rng.standard_normal(t.shape).astype(_numpy_dtype(t.dtype)) for n, t in tensors.items()
    }
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = kernel(**inputs, timing_only=point.run == "timing")
    except (nkic.RunError, nkic.RuntimeFault) as e:
        row["simulate_s"] = time.perf_counter() - t0
        row["status"] = "error"
        row["diagnostics"] = [{"code": type(e).__name__, "message": str(e)}]
        return row
    row["simulate_s"] = time.perf_counter() - t0
    profile = kernel.profile or {}
    row["latency_ns"] = profile.get("total_ns")
    row["summary"] = {
        k: v for k, v in (profile.get("summary") or {}).items() if isinstance(v, (int, float))
    }
    row["status"] = "ok"
    if point.run == "functional":
        expected = np.asarray(_reference(point)(**inputs, **point.params), dtype=np.float64)
        got = np.asarray(out, dtype=np.float64)
        if got.shape != expected.shape:
            row["status"] = "mismatch"
            row["max_abs_err"] = None
        else:
            row["max_abs_err"] = float(np.max(np.abs(got - expected), initial=0.0))
            if not np.allclose(got, expected, rtol=point.rtol, atol=point.atol):
                row["status"] = "mismatch"
    return row


def row_head(point: Point) -> dict:
    return {
        "key": point.key,
        "file": point.file,
        "kernel": point.kernel,
        "shapes": point.shapes,
        "params": point.params,
        "target": point.target,
        "lnc": point.lnc,
        "run": point.run,
        "status": "failed",
        "latency_ns": None,
        "compile_s": None,
        "simulate_s": None,
        "summary": {},
        "diagnostics": [],
    }


def _diagnostics(row: dict, diags) -> None:
    row["diagnostics"] = [{"code": d.code, "message": d.message} for d in diags]
    row["status"] = "failed" if diags else "ok"


def _numpy_dtype(name: str):
    import numpy as np

    if name in ("bfloat16", "float8_e4m3", "float8_e5m2"):
        import ml_dtypes

        return getattr(ml_dtypes, name.replace("float8_e4m3", "float8_e4m3fn"))
    return np.dtype(name)


def _reference(point: Point):
    module, _, function = point.reference.partition(":")
    file = Path(point.spec_dir) / f"{module}.py"
    spec = importlib.util.spec_from_file_location(f"nkic_sweep_ref_{module}", file)
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot load reference module {file}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, function)


def _safe_run(point: Point) -> dict:
    """run_point, with a Python exception (e.g. in the user's reference) recorded as `error`."""
    try:
        return run_point(point)
    except Exception as e:  # the user's reference or an unforeseen fault: record, go on
        row = row_head(point)
        row["status"] = "error"
        row["diagnostics"] = [{"code": type(e).__name__, "message": str(e)}]
        return row
    finally:  # a worker runs many points
        collect_cycles()


def crashed_row(point: Point, reason: str) -> dict:
    row = row_head(point)
    row["status"] = "crashed"
    row["diagnostics"] = [{"code": "worker_crash", "message": reason}]
    return row


def done_keys(results: Path) -> set[str]:
    """Keys of the points already recorded in a results file (an unfinished last line, as
    left by an interrupted sweep, is ignored)."""
    keys: set[str] = set()
    if not results.is_file():
        return keys
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            keys.add(json.loads(line)["key"])
        except (ValueError, KeyError, TypeError):
            continue
    return keys


def open_results(results: Path):
    """The results file opened for appending; a torn last line, as an interrupted sweep may
    leave, is ended first so that the next row starts on a line of its own."""
    if results.is_file() and results.stat().st_size:
        with results.open("rb") as f:
            f.seek(-1, 2)
            torn = f.read(1) != b"\n"
        if torn:
            with results.open("a", encoding="utf-8") as f:
                f.write("\n")
    return results.open("a", encoding="utf-8")


def run_local(points: list[Point], jobs: int, emit) -> None:
    """Run `points` on a pool of `jobs` processes, one point per task, calling `emit(row)` as
    each finishes. Points whose worker died are retried once, one at a time, so a crash is
    pinned on the point that caused it; a second crash records the point as `crashed`."""
    retry: list[Point] = []
    pool = cf.ProcessPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(_safe_run, p): p for p in points}
        for fut in cf.as_completed(futures):
            try:
                emit(fut.result())
            except cf.process.BrokenProcessPool:
                retry.append(futures[fut])
    finally:  # on an interrupt, drop the queued points: the results file resumes them
        pool.shutdown(cancel_futures=True)
    for p in retry:
        with cf.ProcessPoolExecutor(max_workers=1) as pool:
            try:
                emit(pool.submit(_safe_run, p).result())
            except cf.process.BrokenProcessPool:
                emit(crashed_row(p, "the worker process died twice running this point"))


def run_ray(points: list[Point], address: str | None, spec_dir: str, emit) -> None:
    """One Ray task per point on a local instance (address None) or the cluster at
    `address` (an instance this process already started is used as it is); the spec's folder (kernels, reference) ships as the runtime environment's
    working directory. A task whose worker dies is retried once by Ray (max_retries=1)."""
    import ray

    if not ray.is_initialized():  # else the caller's instance and runtime environment
        ray.init(address=address, runtime_env={"working_dir": spec_dir})
    remote = ray.remote(max_retries=1)(_safe_run)
    refs = {remote.remote(_relocated(p)): p for p in points}
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        try:
            emit(ray.get(ready[0]))
        except ray.exceptions.RayError as e:
            emit(crashed_row(refs[ready[0]], str(e).splitlines()[0]))


def _relocated(p: Point) -> Point:
    """The point with its paths relative to the task's working directory (the shipped spec
    folder), so it runs on any node."""
    from dataclasses import replace

    return replace(p, spec_dir=".")


def best(rows: list[dict]) -> list[dict]:
    """The fastest `ok` row per (kernel, shapes, target, lnc)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        if r["status"] != "ok" or r.get("latency_ns") is None:
            continue
        key = (r["file"], r["kernel"], json.dumps(r["shapes"], sort_keys=True), r["target"])
        key += (r["lnc"],)
        if key not in out or r["latency_ns"] < out[key]["latency_ns"]:
            out[key] = r
    return list(out.values())


def write_csv(rows: list[dict], path: Path) -> None:
    """One CSV row per point: shapes, parameters and summary figures become columns."""
    flat = []
    for r in rows:
        d = {k: r[k] for k in ("key", "file", "kernel", "target", "lnc", "run", "status")}
        d.update({k: r.get(k) for k in ("latency_ns", "compile_s", "simulate_s")})
        d.update({f"shape:{k}": v for k, v in r["shapes"].items()})
        d.update({f"param:{k}": v for k, v in r["params"].items()})
        d.update({f"summary:{k}": v for k, v in r.get("summary", {}).items()})
        d["diagnostics"] = "; ".join(f"{x['code']}: {x['message']}" for x in r["diagnostics"])
        flat.append(d)
    columns: list[str] = []
    for d in flat:
        columns += [c for c in d if c not in columns]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(flat)


def read_rows(results: Path) -> list[dict]:
    rows = []
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def summary_table(rows: list[dict]) -> str:
    """The best configuration per (kernel, shapes, target, lnc), one line each."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines = [f"{len(rows)} points: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))]
    for r in best(rows):
        shapes = " ".join(f"{k}={v}" for k, v in r["shapes"].items())
        params = " ".join(f"{k}={v}" for k, v in r["params"].items()) or "-"
        lines.append(
            f"best {r['kernel']} [{shapes}] {r['target']} lnc={r['lnc']}: {params} "
            f"{r['latency_ns']:.0f} ns"
        )
    return "\n".join(lines)


def plot_figure(rows: list[dict]):
    """Predicted latency against the parameters: one panel per (kernel, shapes, target, lnc),
    one bar per configuration that ran (`ok`), fastest first, the best highlighted. A matplotlib
    Figure built with the object API (no pyplot, no global backend)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the sweep picture needs matplotlib: pip install 'nkic[plot]'") from None
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["status"] != "ok" or r.get("latency_ns") is None:
            continue
        shapes = " ".join(f"{k}={v}" for k, v in r["shapes"].items())
        key = (r["kernel"], shapes, r["target"], r["lnc"])
        groups.setdefault(key, []).append(r)
    if not groups:
        raise ValueError("no point ran to a predicted latency: nothing to draw")
    heights = [max(2.0, 0.28 * len(g) + 1.2) for g in groups.values()]
    fig = Figure(figsize=(9, sum(heights)), layout="constrained")
    axes = fig.subplots(len(groups), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, ((kernel, shapes, target, lnc), group) in zip(axes, groups.items()):
        group = sorted(group, key=lambda r: r["latency_ns"])
        unit, scale = ("ms", 1e6) if group[-1]["latency_ns"] >= 2e6 else ("µs", 1e3)
        labels = [" ".join(f"{k}={v}" for k, v in r["params"].items()) or "-" for r in group]
        values = [r["latency_ns"] / scale for r in group]
        colors = ["tab:green"] + ["tab:blue"] * (len(group) - 1)
        ax.barh(range(len(group)), values, color=colors)
        ax.set_yticks(range(len(group)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"predicted latency ({unit})")
        ax.set_title(f"{kernel} [{shapes}] {target} lnc={lnc}: best {labels[0]}", fontsize=9)
    return fig


def write_plot(rows: list[dict], path: Path) -> None:
    """Draw `plot_figure` to `path`, in the format its extension names (.svg, .png, .pdf)."""
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"cannot draw the sweep as .{fmt or '?'}: use .svg, .png or .pdf")
    plot_figure(rows).savefig(str(path), format=fmt)
