"""Beta 1 kernels of nki-samples and the SDK examples, compiled and run at their drivers' shapes.

`beta1_shapes.toml` lists, per kernel file (a path under the corpus directory), the kernels its
own test or driver code calls, each with the arguments of that call as `nkic --arg` specs (and
the launch grid of a `kernel[d0, d1]` call); a kernel whose call `--arg` cannot express carries
a `limit` instead. Each kernel is compiled and run on the simulator (`nkic run --timing-only`).
A file *runs* when every kernel the table lists for it compiles and runs.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tomllib

from .library import TableError, parse_spec
from .nkic_runs import OK, Outcome, run_nkic

SHAPES_TOML = Path(__file__).with_name("beta1_shapes.toml")


@dataclass(frozen=True)
class Beta1Kernel:
    file: str  # repository/path, as the file keys of the check results
    entry: str
    args: tuple[tuple[str, str], ...] = ()
    grid: str = ""
    limit: str = ""

    @property
    def key(self) -> str:
        return f"{self.file}::{self.entry}"


def load_table(path: str | Path = SHAPES_TOML) -> list[Beta1Kernel]:
    """The kernels of the table, each arg validated as an `--arg` spec."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    for i, k in enumerate(data.get("kernel", [])):
        where = f"{Path(path).name}: kernel #{i + 1}"
        if not isinstance(k.get("file"), str) or not isinstance(k.get("entry"), str):
            raise TableError(f"{where}: needs 'file' and 'entry'")
        args = k.get("args", {})
        for name, spec in args.items():
            try:
                parse_spec(spec)
            except (ValueError, TypeError) as e:
                raise TableError(f"{where} ({k['entry']}): arg {name!r}: {e}") from None
        grid = str(k.get("grid", ""))
        if grid and not all(d.strip().isdigit() for d in grid.split(",")):
            raise TableError(f"{where} ({k['entry']}): grid must be D0,D1,...")
        out.append(
            Beta1Kernel(k["file"], k["entry"], tuple(args.items()), grid, k.get("limit", ""))
        )
    return out


def run_kernel(corpus: Path, k: Beta1Kernel, timeout: float) -> dict:
    """Compile the kernel at its shapes and run it for timing."""
    res: dict = {"key": k.key, "file": k.file, "entry": k.entry}
    if k.limit:
        return {**res, "status": "limit", "detail": k.limit, "seconds": 0.0}
    with tempfile.TemporaryDirectory(prefix="nkic-beta1-") as tmp:
        neff = Path(tmp) / "kernel.neff"
        argv = ["compile", str(corpus / k.file), "-k", k.entry, "-o", str(neff)]
        for name, spec in k.args:
            argv += ["--arg", f"{name}={spec}"]
        if k.grid:
            argv += ["--grid", k.grid]
        comp = run_nkic(argv, timeout, cwd=tmp)
        if comp.status != OK:
            return {**res, **_failed("compile", comp)}
        profile = Path(tmp) / "profile.json"
        run = run_nkic(
            ["run", str(neff), "--timing-only", "--profile", str(profile), "--out-dir", tmp],
            timeout,
            cwd=tmp,
        )
        seconds = round(comp.seconds + run.seconds, 2)
        if run.status != OK:
            return {**res, **_failed("run", run), "seconds": seconds}
        latency = json.loads(profile.read_text()).get("total_ns") if profile.is_file() else None
        return {**res, "status": "run ok", "latency_ns": latency, "seconds": seconds}


def _failed(stage: str, o: Outcome) -> dict:
    first = o.errors[0] if o.errors else None
    detail = f"`{first.code}`: {first.message}" if first else o.detail
    return {"status": f"{stage} {o.status}", "detail": detail, "seconds": round(o.seconds, 2)}


def summary(results: list[dict], beta1_files: list[str]) -> dict:
    """Per repository: Beta 1 files, files whose listed kernels all run, kernels run."""
    by_file: dict[str, list[dict]] = {}
    for r in results:
        by_file.setdefault(r["file"], []).append(r)
    out: dict[str, dict] = {}
    for f in beta1_files:
        repo = f.split("/", 1)[0]
        row = out.setdefault(repo, {"files": 0, "files_run": 0, "kernels": 0, "kernels_run": 0})
        row["files"] += 1
        rs = by_file.get(f, [])
        row["kernels"] += len(rs)
        row["kernels_run"] += sum(1 for r in rs if r["status"] == "run ok")
        row["files_run"] += bool(rs) and all(r["status"] == "run ok" for r in rs)
    return out
