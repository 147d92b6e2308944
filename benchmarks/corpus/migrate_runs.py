"""`--migrate`: every Beta 1 kernel file of the corpus through `nkic migrate` (to NKI 0.7), the
result checked under `--nki 0.7`, and each kernel with known shapes verified by running both
versions on the same seeded inputs.

Shapes come from `beta1_shapes.toml` (the Beta 1 kernels at their tests' shapes) and
`migrate_shapes.toml` (more, same format): per kernel `file` (a path under the corpus
directory), `entry`, `args` (`nkic --arg` specs), optional `grid` ("D0,D1") or `limit` (why the
test's call cannot be written with `--arg`).

Per file: *migrated* (`nkic migrate -o` succeeded), *clean under 0.7* (`nkic check --nki 0.7`
reports no error and no deprecation warning), *outputs* (per kernel with shapes: identical,
within tolerance, differ, or not verified and why), and the manual steps (`TODO(nkic migrate)` comments) left.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomllib

from .discover import BETA1, KernelFile
from .nkic_runs import (
    DIAGNOSTICS,
    INTERNAL,
    OK,
    TIMEOUT,
    USAGE,
    Outcome,
    _env,
    _internal_error,
    last_line,
    nkic_command,
    run_limited,
)

HERE = Path(__file__).resolve().parent
SHAPE_TABLES = (HERE / "beta1_shapes.toml", HERE / "migrate_shapes.toml")
DEPRECATED = "nkic_deprecated_api"
#: the verdict on outputs that differ only by the rounding the migration changed
TOLERANCE = "within tolerance"


@dataclass(frozen=True)
class Shaped:
    """A kernel of a Beta 1 file at the shapes of its test."""

    file: str  # repository/path
    entry: str
    args: tuple[tuple[str, str], ...] = ()
    grid: str = ""
    limit: str = ""


def load_shapes(paths=SHAPE_TABLES) -> dict[str, list[Shaped]]:
    """file -> its kernels with shapes, from every table that exists (the first table that
    lists a kernel wins)."""
    out: dict[str, list[Shaped]] = {}
    seen: set[tuple[str, str]] = set()
    for path in paths:
        if not Path(path).is_file():
            continue
        with open(path, "rb") as f:
            data = tomllib.load(f)
        for k in data.get("kernel", []):
            key = (k["file"], k["entry"])
            if key in seen:
                continue
            seen.add(key)
            shaped = Shaped(
                k["file"],
                k["entry"],
                tuple((str(n), str(v)) for n, v in k.get("args", {}).items()),
                str(k.get("grid", "")),
                k.get("limit", ""),
            )
            out.setdefault(k["file"], []).append(shaped)
    return out


#: A verification compiles and runs this many kernels in one command.
VERIFIED_KERNELS = 2


def _run(args: list[str], timeout: float, cwd: str) -> tuple[str, int, str, str, float]:
    """(status, exit code, stdout, stderr, seconds) of `nkic ARGS`."""
    start = time.monotonic()
    proc = run_limited(nkic_command() + args, timeout, cwd=cwd, env=_env())
    if isinstance(proc, Outcome):
        return TIMEOUT, -1, "", proc.detail, proc.seconds
    seconds = time.monotonic() - start
    internal = _internal_error(proc.stderr)
    if internal or proc.returncode < 0:
        return INTERNAL, proc.returncode, proc.stdout, internal or "killed", seconds
    status = {0: OK, 1: DIAGNOSTICS}.get(proc.returncode, USAGE)
    return status, proc.returncode, proc.stdout, proc.stderr, seconds


def _check(twin: str, timeout: float, cwd: str, how: dict | None = None, kernels=()) -> dict:
    """`nkic check --nki 0.7` of the migrated file: clean, errors (the first), deprecated.
    `how` is the file's `[[check]]` entry of notes.toml (how its tests use it): its `lnc`,
    and its per-kernel `args`, with which each of `kernels` is checked by name (its `nki` is
    the original's version, not the migrated file's)."""
    how = how or {}
    common = ["--nki", "0.7", "--format", "json"]
    common += ["--lnc", str(how["lnc"])] if "lnc" in how else []
    if how.get("args"):
        runs = [
            ["check", twin, "-k", kernel, *common]
            + [a for n, v in how["args"].get(kernel, {}).items() for a in ("--arg", f"{n}={v}")]
            for kernel in kernels
        ]
    else:
        runs = [["check", twin, *common]]
    diags: list[dict] = []
    seconds = 0.0
    for argv in runs:
        status, _, out, err, took = _run(argv, timeout, cwd)
        seconds += took
        if status not in (OK, DIAGNOSTICS):
            return {"status": status, "detail": last_line(err), "seconds": seconds}
        try:
            diags += json.loads(out)
        except json.JSONDecodeError:
            return {"status": USAGE, "detail": last_line(err) or "no JSON", "seconds": seconds}
    errors = [d for d in diags if d.get("severity") == "error"]
    deprecated = [d for d in diags if d.get("code") == DEPRECATED]
    first = (errors or deprecated or [None])[0]
    result = {
        "status": "errors" if errors else "deprecated" if deprecated else "clean",
        "errors": len(errors),
        "seconds": seconds,
    }
    if first:
        result["detail"] = f"{first['code']} (line {first.get('line', 0)}): {first['message']}"
    return result


_STEP = re.compile(r"^warning\[nkic_migrate_manual_step\]: (.*)$")
_LOC = re.compile(r"^\s*--> .*:(\d+):(\d+)\s*$")


def manual_steps(stderr: str) -> list[dict]:
    """The `nkic_migrate_manual_step` warnings of `nkic migrate`: line (of the original file)
    and message."""
    steps: list[dict] = []
    pending = None
    for line in stderr.splitlines():
        m = _STEP.match(line)
        if m:
            pending = {"line": 0, "message": m.group(1)}
            steps.append(pending)
            continue
        loc = _LOC.match(line)
        if loc and pending is not None and not pending["line"]:
            pending["line"] = int(loc.group(1))
    return steps


def _verify(kf: KernelFile, k: Shaped, timeout: float, cwd: str) -> dict:
    """`nkic migrate FILE -k ENTRY --arg ...`: both versions compiled, run and compared."""
    if k.limit:
        return {"entry": k.entry, "status": "limit", "detail": k.limit}
    args = ["migrate", kf.abspath, "-k", k.entry]
    for name, spec in k.args:
        args += ["--arg", f"{name}={spec}"]
    if k.grid:
        args += ["--grid", k.grid]
    # one command compiles and runs two kernels, the original and the migrated one: the compile
    # and run of each together get the limit that a library case's compile alone gets
    status, _, _, err, seconds = _run(args, VERIFIED_KERNELS * timeout, cwd)
    if status in (INTERNAL, TIMEOUT, USAGE):
        return {"entry": k.entry, "status": status, "detail": last_line(err), "seconds": seconds}
    line = next((ln for ln in err.splitlines() if ln.startswith(f"{k.entry}: ")), "")
    if "outputs bit-identical" in line:
        verdict = "identical"
    elif "outputs within tolerance" in line:
        verdict = TOLERANCE
    elif "outputs differ" in line:
        verdict = "differ"
    else:
        verdict = "not verified"
    detail = line.removeprefix(f"{k.entry}: ").removeprefix("not verified: ")
    return {"entry": k.entry, "status": verdict, "detail": detail, "seconds": seconds}


def migrate_file(
    kf: KernelFile, shaped: list[Shaped], timeout: float, how: dict | None = None
) -> dict:
    """One Beta 1 file: migrated beside the original (so that its relative imports resolve;
    removed after), checked under NKI 0.7 (as its tests use it: `how`, see `_check`), and its
    kernels with shapes verified."""
    entry = {"key": kf.key, "repo": kf.repo, "kernels": list(kf.kernels)}
    fd, twin = tempfile.mkstemp(
        prefix=".nkic-migrated-", suffix=".py", dir=os.path.dirname(kf.abspath)
    )
    os.close(fd)
    try:
        with tempfile.TemporaryDirectory(prefix="nkic-migrate-") as cwd:
            command = ["migrate", kf.abspath, "-o", twin]
            grids = {k.grid for k in shaped if not k.limit}
            if len(grids) == 1 and "" not in grids:  # its kernels' launch grid: their loops
                command += ["--grid", grids.pop()]
            status, _, _, err, seconds = _run(command, timeout, cwd)
            entry["migrate"] = status
            entry["seconds"] = seconds
            if status != OK:
                entry["detail"] = last_line(err)
                return entry
            entry["todos"] = manual_steps(err)
            entry["check"] = _check(twin, timeout, cwd, how, kf.kernels)
            entry["verify"] = [_verify(kf, k, timeout, cwd) for k in shaped]
    finally:
        Path(twin).unlink(missing_ok=True)
    entry["seconds"] = round(
        entry["seconds"]
        + entry.get("check", {}).get("seconds", 0.0)
        + sum(v.get("seconds", 0.0) for v in entry.get("verify", [])),
        2,
    )
    return entry


def run_all(
    files: list[KernelFile],
    timeout: float,
    jobs: int,
    progress=None,
    tables=SHAPE_TABLES,
    hows: dict[str, dict] | None = None,
) -> list[dict]:
    """Every Beta 1 file of `files`, `jobs` at a time, in the order given; `hows` are the
    `[[check]]` entries of notes.toml by file."""
    hows = hows or {}
    beta1 = [f for f in files if f.dialect == BETA1]
    shapes = load_shapes(tables)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(migrate_file, f, shapes.get(f.key, []), timeout, hows.get(f.key))
            for f in beta1
        ]
        results = []
        for i, fut in enumerate(futures, 1):
            res = fut.result()
            results.append(res)
            if progress:
                progress(f"[migrate {i}/{len(beta1)}] {res['key']}: {file_status(res)}")
    return results


def file_status(entry: dict) -> str:
    """ok: migrated with no manual step left, clean under 0.7, every kernel with shapes
    identical or within tolerance (or none has shapes)."""
    if entry.get("migrate") != OK:
        return f"migrate {entry.get('migrate')}"
    check = entry.get("check", {}).get("status")
    if check != "clean":
        return f"check {check}"
    verdicts = [v["status"] for v in entry.get("verify", []) if v["status"] != "limit"]
    bad = [v for v in verdicts if v not in ("identical", TOLERANCE)]
    if bad:
        return f"outputs {bad[0]}"
    return "manual steps" if entry.get("todos") else "ok"


def summary(results: list[dict]) -> dict:
    verified = [v for e in results for v in e.get("verify", []) if v["status"] != "limit"]
    return {
        "files": len(results),
        "migrated": sum(e.get("migrate") == OK for e in results),
        "clean": sum(e.get("check", {}).get("status") == "clean" for e in results),
        "ok": sum(file_status(e) == "ok" for e in results),
        "internal": sum(
            e.get("migrate") == INTERNAL
            or e.get("check", {}).get("status") == INTERNAL
            or any(v["status"] == INTERNAL for v in e.get("verify", []))
            for e in results
        ),
        "kernels_with_shapes": len(verified),
        "identical": sum(v["status"] == "identical" for v in verified),
        "tolerance": sum(v["status"] == TOLERANCE for v in verified),
        "differ": sum(v["status"] == "differ" for v in verified),
        "todos": sum(len(e.get("todos", [])) for e in results),
    }


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(v: dict, public_finding: bool) -> str:
    """A kernel's outputs cell: its verdict, why when not identical, and whether the reason is
    a problem of the public code itself (the original kernel fails, and notes.toml says why)."""
    text = f"{v['entry']}: {v['status']}"
    if v["status"] == TOLERANCE:  # the measured difference and what explains it
        return text + f" ({v['detail'].removeprefix('outputs within tolerance (')}"
    if v["status"] == "identical" or not v.get("detail"):
        return text
    if public_finding and v["status"] == "not verified" and v["detail"].startswith("original"):
        text += ", a problem of the public code (below)"
    return text + f" ({v['detail']})"


def markdown(results: list[dict] | None, findings: list[dict] | None = None) -> list[str]:
    """The docs/coverage.md section (empty without a --migrate run); `findings` are the
    problems of the public code that notes.toml lists."""
    if not results:
        return []
    public = {f["key"] for f in findings or []}
    s = summary(results)
    out = [
        "",
        "## Beta 1 kernels migrated to NKI 0.7",
        "",
        "`nkic migrate` (to NKI 0.7) on every Beta 1 kernel file; the migrated file checked "
        "with `nkic check --nki 0.7` (*clean*: no error and no deprecation warning); each "
        "kernel with shapes in `benchmarks/corpus/beta1_shapes.toml` or `migrate_shapes.toml` "
        "compiled from both versions and run on the same seeded inputs, in one command "
        f"with {VERIFIED_KERNELS} times the per-command limit (*identical*: every "
        "output bit for bit; *within tolerance*: apart only by what the roundings the migration "
        "changed explain, docs/migrate.md). *Manual steps*: the `TODO(nkic migrate)` comments "
        "left in the migrated file.",
        "",
        f"{s['files']} files: {s['migrated']} migrated, {s['clean']} clean under 0.7, "
        f"{s['ok']} clean with no manual step and every kernel verified identical or within "
        "tolerance (or no shapes); "
        f"{s['identical']} of {s['kernels_with_shapes']} kernels with shapes identical, "
        f"{s['tolerance']} within tolerance, {s['differ']} differ; {s['todos']} manual steps; {s['internal']} files with an "
        "internal error.",
        "",
        "| file | migrated | clean under 0.7 | outputs | manual steps |",
        "|---|---|---|---|---|",
    ]
    for e in results:
        check = e.get("check", {})
        clean = check.get("status", "")
        if clean and clean != "clean":
            clean += f": {check.get('detail', '')}"
        outputs = "; ".join(_verdict(v, e["key"] in public) for v in e.get("verify", []))
        todos = "; ".join(f"{t['line']}: {t['message']}" for t in e.get("todos", []))
        migrated = e.get("migrate", "")
        if migrated != OK:
            migrated += f": {e.get('detail', '')}"
        out.append(
            f"| {e['key']} | {_cell(migrated)} | {_cell(clean)} | {_cell(outputs, 300)} "
            f"| {_cell(todos, 300)} |"
        )
    return out
