"""`python -m benchmarks.corpus --corpus DIR`: check, compile and run the public kernels."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import tomllib
from threadpoolctl import threadpool_limits

from . import beta1_runs, library, migrate_runs, report
from .discover import REPOS, KernelFile, discover
from .nkic_runs import OK, Outcome, run_nkic

# nkic reported the file clean, but checking one of its kernels by name reports a problem
MISSED = "missed-kernels"

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NOTES_TOML = HERE / "notes.toml"
DEFAULT_CORPUS = ROOT.parent / "corpus"
RESULTS = HERE / "results" / "last.json"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__)
    p.add_argument(
        "--corpus",
        default=os.environ.get("CORPUS") or str(DEFAULT_CORPUS),
        help="directory holding checkouts of nki-library, nki-samples and aws-neuron-sdk "
        "(default: $CORPUS, else ../corpus beside the repository)",
    )
    p.add_argument("--filter", default="", help="only files and library kernels containing this")
    p.add_argument("--jobs", type=int, default=2, help="nkic processes at a time (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="CPU seconds per nkic command (wall clock backstop: 4 times that)",
    )
    p.add_argument(
        "--numerics",
        action="store_true",
        default=os.environ.get("NUMERICS", "") not in ("", "0"),
        help="compare library kernels with their numpy references (also NUMERICS=1)",
    )
    p.add_argument("--no-check", action="store_true", help="skip `nkic check` of the files")
    p.add_argument("--no-library", action="store_true", help="skip the library kernels")
    p.add_argument(
        "--migrate",
        action="store_true",
        help="also `nkic migrate` every Beta 1 file, check the result under NKI 0.7 and verify "
        "its kernels with shapes",
    )
    p.add_argument("--json", default=str(RESULTS), help=f"results file (default {RESULTS})")
    p.add_argument(
        "--out",
        help="coverage report to write (none by default; `make corpus` writes docs/coverage.md)",
    )
    p.add_argument("--compare", metavar="OLD.json", help="print what changed since OLD.json")
    p.add_argument("--shapes", default=str(library.SHAPES_TOML), help=argparse.SUPPRESS)
    p.add_argument("--notes", default=str(NOTES_TOML), help=argparse.SUPPRESS)
    p.add_argument("--beta1-shapes", default=str(beta1_runs.SHAPES_TOML), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def load_notes(path: Path) -> tuple[dict[str, str], list[dict]]:
    """The files the harness does not check (key -> reason) and the problems found in the
    public code itself ({key, note})."""
    if not path.is_file():
        return {}, []
    with open(path, "rb") as f:
        data = tomllib.load(f)
    skip = {e["path"]: e["reason"] for e in data.get("file", [])}
    findings = [{"key": e["path"], "note": e["note"]} for e in data.get("finding", [])]
    return skip, findings


def load_limits(path: Path) -> list[dict]:
    """The known limits of nkic on library cases (`[[limit]]`): {kernel, case, note}, `case`
    a substring of the case ids it covers."""
    if not path.is_file():
        return []
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return [
        {"kernel": e["kernel"], "case": e["case"], "note": e["note"]} for e in data.get("limit", [])
    ]


def note_limits(limits: list[dict], kernel: str, case_id: str, res: dict) -> None:
    """A case that does not compile and that a known limit covers gets the limit's note (shown
    in docs/coverage.md); one that compiles keeps none, so a stale limit shows no note."""
    if res["compile"] == "ok":
        return
    for lim in limits:
        if lim["kernel"] == kernel and lim["case"] in case_id:
            res["note"] = "; ".join(x for x in (res.get("note"), lim["note"]) if x)


def load_check_options(path: Path) -> dict[str, dict]:
    """How to check the files that `nkic check` with its defaults would not check as their
    tests use them (key -> {reason, nki, lnc, args}): the NKI version the file is written in,
    the logical-core degree its test launches, the arguments its test passes to a kernel
    (`args = { kernel = { name = "spec" } }`; a kernel without is checked with its defaults)."""
    if not path.is_file():
        return {}
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for e in data.get("check", []):
        how = {"reason": e["reason"]}
        how.update({k: e[k] for k in ("nki", "lnc", "args") if k in e})
        out[e["path"]] = how
    return out


def _options(how: dict) -> list[str]:
    argv = ["--nki", str(how["nki"])] if "nki" in how else []
    return argv + (["--lnc", str(how["lnc"])] if "lnc" in how else [])


def _kernel_args(how: dict, kernel: str) -> list[str]:
    return [
        a for n, s in how.get("args", {}).get(kernel, {}).items() for a in ("--arg", f"{n}={s}")
    ]


def _git_head(path: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip() or "?"


def _relative(errors, corpus: Path) -> list[dict]:
    out = []
    for e in errors:
        d = e.to_json()
        try:
            d["file"] = Path(d["file"]).resolve().relative_to(corpus).as_posix()
        except ValueError:
            pass
        out.append(d)
    return out


def check_file(kf: KernelFile, corpus: Path, timeout: float, how: dict | None = None) -> dict:
    """`nkic check` on the file; when it reports the file clean, each kernel the harness found
    is checked by name too, so that a kernel nkic skipped cannot pass as clean. `how` (from
    `load_check_options`) adds options; with per-kernel arguments, each kernel is checked by
    name only, its failure being the file's."""
    how = how or {}
    roots = library.import_roots(corpus / "nki-library") if kf.repo == "nki-library" else ()
    common = ["--format", "json"] + _options(how)
    with tempfile.TemporaryDirectory(prefix="nkic-corpus-") as tmp:
        status, errors, detail, seconds = OK, [], "", 0.0
        if not how.get("args"):
            o: Outcome = run_nkic(
                ["check", kf.abspath] + common, timeout, cwd=tmp, pythonpath=roots
            )
            status, errors, detail, seconds = o.status, o.errors, o.detail, o.seconds
        if status == OK:
            for kernel in kf.kernels:
                by_name = run_nkic(
                    ["check", kf.abspath, "-k", kernel] + common + _kernel_args(how, kernel),
                    timeout,
                    cwd=tmp,
                    pythonpath=roots,
                )
                seconds += by_name.seconds
                if by_name.status != OK:
                    status, errors, detail = by_name.status, by_name.errors, by_name.detail
                    if not how.get("args"):
                        status = MISSED
                        detail = f"-k {kernel}: {by_name.status} {by_name.detail}".strip()
                    break
    return {
        "key": kf.key,
        "repo": kf.repo,
        "dialect": kf.dialect,
        "kernels": list(kf.kernels),
        "status": status,
        "seconds": round(seconds, 2),
        "errors": _relative(errors[:50], corpus),
        "detail": detail,
        **({"how": how} if how else {}),
    }


def run_library_case(
    lib_root: Path, kernel: library.LibraryKernel, case: library.Case, args, corpus: Path
) -> dict:
    with tempfile.TemporaryDirectory(prefix="nkic-corpus-") as tmp:
        r = library.run_case(lib_root, kernel, case, Path(tmp), args.timeout, args.numerics)
    out = {
        "key": case.key,
        "id": case.id,
        "args": case.args,
        "lnc": case.lnc,
        "compile": r.compile.status,
        "compile_errors": _relative(r.compile.errors[:20], corpus),
        "compile_detail": r.compile.detail,
        "seconds": round(r.compile.seconds + (r.run.seconds if r.run else 0.0), 2),
    }
    if r.run is not None:
        out["run"] = r.run.status
        out["run_errors"] = _relative(r.run.errors[:20], corpus)
        out["run_detail"] = r.run.detail
    if r.latency_ns is not None:
        out["latency_ns"] = r.latency_ns
    if r.prog_bytes is not None:
        out["prog_bytes"] = r.prog_bytes
    if r.numerics:
        out["numerics"] = r.numerics
    if r.note:
        out["note"] = r.note
    return out


def run(args: argparse.Namespace) -> dict:
    corpus = Path(args.corpus).resolve()
    notes, findings = load_notes(Path(args.notes))
    hows = load_check_options(Path(args.notes))
    files = [f for f in discover(corpus) if args.filter in f.key] if not args.no_check else []
    skipped = [{"key": f.key, "reason": notes[f.key]} for f in files if f.key in notes]
    files = [f for f in files if f.key not in notes]
    kernels = [] if args.no_library else library.load_table(args.shapes)
    lib_root = corpus / "nki-library"
    if args.filter:
        kernels = [k for k in kernels if args.filter in k.name or args.filter in k.file]
    if kernels and not lib_root.is_dir():
        print(
            f"note: no nki-library checkout in {corpus}: library kernels skipped", file=sys.stderr
        )
        kernels = []
    cases = [(k, c) for k in kernels for c in k.cases]
    beta1 = [] if args.no_check else beta1_runs.load_table(args.beta1_shapes)
    beta1 = [k for k in beta1 if args.filter in k.file and (corpus / k.file).is_file()]
    start = time.monotonic()
    file_results: dict[str, dict] = {}
    case_results: dict[str, dict] = {}
    beta1_results: dict[str, dict] = {}
    total = len(files) + len(cases) + len(beta1)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {
            pool.submit(check_file, f, corpus, args.timeout, hows.get(f.key)): ("file", f.key)
            for f in files
        }
        for k, c in cases:
            fut = pool.submit(run_library_case, lib_root, k, c, args, corpus)
            futures[fut] = ("case", c.key)
        for k in beta1:
            futures[pool.submit(beta1_runs.run_kernel, corpus, k, args.timeout)] = ("beta1", k.key)
        for done, fut in enumerate(as_completed(futures), 1):
            kind, key = futures[fut]
            res = fut.result()
            if kind == "file":
                file_results[key] = res
                status = report.file_status(res)
            elif kind == "beta1":
                beta1_results[key] = res
                status = res["status"]
            else:
                case_results[key] = res
                status = report.case_status(res)
                if res.get("numerics"):
                    status += f"; numerics {res['numerics']}"
            print(f"[{done}/{total}] {key}: {status} ({res['seconds']:.1f} s)", file=sys.stderr)
    limits = load_limits(Path(args.notes))
    for k in kernels:
        for c in k.cases:
            note_limits(limits, k.name, c.id, case_results[c.key])
    lib = []
    for k in kernels:
        lib.append(
            {
                "name": k.name,
                "file": k.file,
                "entry": k.entry,
                "test": k.test,
                "limit": k.limit,
                "reference": k.reference,
                "cases": [case_results[c.key] for c in k.cases],
            }
        )
    return {
        "meta": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(time.monotonic() - start, 1),
            "jobs": args.jobs,
            "timeout": args.timeout,
            "numerics": args.numerics,
            "filter": args.filter,
            "nkic_commit": _git_head(ROOT),
            "corpus": {r: _git_head(corpus / r) for r in REPOS if (corpus / r).is_dir()},
        },
        "files": [file_results[f.key] for f in files],
        "library": lib,
        "beta1_runs": [beta1_results[k.key] for k in beta1],
        "skipped": skipped,
        "findings": findings,
        **_migrations(args, corpus, notes),
    }


def _migrations(args: argparse.Namespace, corpus: Path, notes: dict[str, str]) -> dict:
    if not args.migrate:
        return {}
    files = [f for f in discover(corpus) if args.filter in f.key and f.key not in notes]
    done = migrate_runs.run_all(
        files,
        args.timeout,
        args.jobs,
        lambda line: print(line, file=sys.stderr),
        hows=load_check_options(Path(args.notes)),
    )
    return {"migrate": done}


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    corpus = Path(args.corpus)
    if not any((corpus / r).is_dir() for r in REPOS):
        return _fail(
            f"{corpus} holds none of {', '.join(REPOS)}: pass the directory of their "
            "checkouts (make corpus CORPUS=DIR)"
        )
    old = None
    if args.compare:
        try:
            old = json.loads(Path(args.compare).read_text())
        except (OSError, json.JSONDecodeError) as e:
            return _fail(f"cannot read {args.compare}: {e}")
    try:
        # One BLAS/OpenMP thread in this process: the worker threads fork nkic subprocesses
        # while another computes a numpy reference, and OpenBLAS's fork handler waits for its
        # pool, which the other thread's matmul holds (the run hung there, no child left).
        with threadpool_limits(limits=1):
            results = run(args)
    except (library.TableError, tomllib.TOMLDecodeError, KeyError) as e:
        return _fail(f"bad harness table: {e}")
    out_json = Path(args.json)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(results, indent=1) + "\n")
    md_path = args.out
    if md_path:
        Path(md_path).write_text(report.render_markdown(results))
    rows = report.summary_rows(results)
    for r in rows:
        print(
            f"{r['repo']:>15} {r['dialect']:>7}: {r['files']} files, {r['clean']} clean, "
            f"{r['failing']} failing, {r['internal']} internal errors, {r['timeouts']} timeouts, "
            f"{r['missed']} with kernels missed"
        )
    lib = report.library_summary(results)
    print(
        f"library at test shapes: {lib['cases']} cases of {lib['with_cases']} kernels, "
        f"{lib['compile_ok']} compile, {lib['run_ok']} run; {lib['limits']} harness limits"
    )
    if args.numerics:
        print(
            f"numerics: {lib['numerics_match']} case(s) match, {lib['numerics_mismatch']} "
            f"mismatch; kernels matching in every compared case: {lib['numerics_kernels']}"
        )
    beta1_files = [f["key"] for f in results["files"] if f["dialect"] == "beta1"]
    for repo, r in beta1_runs.summary(results.get("beta1_runs", []), beta1_files).items():
        print(
            f"{repo:>15} beta1 at test shapes: {r['files_run']}/{r['files']} files compile and "
            f"run, {r['kernels_run']}/{r['kernels']} kernels"
        )
    if results.get("migrate"):
        m = migrate_runs.summary(results["migrate"])
        print(
            f"beta1 migrated to 0.7: {m['files']} files, {m['migrated']} migrated, {m['clean']} "
            f"clean under 0.7, {m['ok']} ok; {m['identical']}/{m['kernels_with_shapes']} kernels "
            f"with shapes identical; {m['todos']} manual steps; {m['internal']} internal errors"
        )
    print(f"results: {out_json}" + (f"; report: {md_path}" if md_path else ""))
    if old is not None:
        print("\n".join(report.compare(old, results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
