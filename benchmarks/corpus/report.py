"""The results of a corpus run: JSON, `docs/coverage.md`, and the comparison of two runs."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from nkirt.limits import format_size
from nkirt.neff import MAX_PROG_BYTES

from . import migrate_runs
from .discover import REPOS

FILE_RANK = {
    "clean": 0,
    "failing": 1,
    "missed-kernels": 2,
    "usage-error": 2,
    "timeout": 3,
    "internal-error": 3,
}
CASE_RANK = {
    "run ok": 0,
    "run failing": 1,
    "compile failing": 2,
    "usage-error": 2,
    "timeout": 3,
    "internal-error": 3,
}


def pattern(message: str) -> str:
    """A message with its particulars (quoted names, numbers) blanked, to group like failures."""
    s = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", message)
    s = re.sub(r"(?<![A-Za-z_])-?\d+(\.\d+)?(?![A-Za-z_])", "N", s)
    s = re.sub(r"\(\s*N(\s*,\s*N)*\s*,?\s*\)|\[\s*N(\s*,\s*N)*\s*\]", "(…)", s)
    return s


def file_status(entry: dict) -> str:
    return {"ok": "clean", "diagnostics": "failing"}.get(entry["status"], entry["status"])


def case_status(case: dict) -> str:
    comp, run = case["compile"], case.get("run")
    for stage in (comp, run or ""):
        if stage in ("internal-error", "timeout", "usage-error"):
            return stage
    if comp != "ok":
        return "compile failing"
    return "run ok" if run == "ok" else "run failing"


def _first(errors: list[dict], detail: str) -> str:
    if errors:
        e = errors[0]
        where = f" ({e['file']}:{e['line']})" if e.get("file") else ""
        return f"`{e['code']}`: {_cell(e['message'])}{where}"
    return _cell(detail)


def how_checked(how: dict) -> str:
    """The options a file was checked with, in words: `NKI 0.6, LNC=2, the test's arguments`."""
    parts = [f"NKI {how['nki']}"] if "nki" in how else []
    parts += [f"LNC={how['lnc']}"] if "lnc" in how else []
    for kernel, args in how.get("args", {}).items():
        given = ", ".join(f"{n}={s}" for n, s in args.items())
        parts.append(f"{kernel}({given})")
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def top_causes(items: list[tuple[str, list[dict]]], limit: int = 15) -> list[dict]:
    """Failures grouped by code and message pattern: how many items each affects, for how many
    it is the first error, and an example message."""
    affected: Counter = Counter()
    first: Counter = Counter()
    example: dict[tuple, str] = {}
    for _key, errors in items:
        seen = set()
        for i, e in enumerate(errors):
            k = (e["code"], pattern(e["message"]))
            example.setdefault(k, e["message"])
            if i == 0:
                first[k] += 1
            if k not in seen:
                seen.add(k)
                affected[k] += 1
    ranked = sorted(affected, key=lambda k: (-affected[k], -first[k], k))
    return [
        {
            "code": k[0],
            "pattern": k[1],
            "affected": affected[k],
            "first": first[k],
            "example": example[k],
        }
        for k in ranked[:limit]
    ]


def _causes_table(causes: list[dict], what: str) -> list[str]:
    if not causes:
        return ["None.", ""]
    lines = [
        f"| code | message pattern | {what} affected | first error in | example |",
        "|---|---|---:|---:|---|",
    ]
    for c in causes:
        lines.append(
            f"| `{c['code']}` | {_cell(c['pattern'])} | {c['affected']} | {c['first']} "
            f"| {_cell(c['example'])} |"
        )
    return lines + [""]


def summary_rows(results: dict) -> list[dict]:
    groups: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for f in results["files"]:
        groups[(f["repo"], f["dialect"])][file_status(f)] += 1
    order = {r: i for i, r in enumerate(REPOS)}
    rows = []
    for (repo, dialect), c in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0])
    ):
        rows.append(
            {
                "repo": repo,
                "dialect": dialect,
                "files": sum(c.values()),
                "clean": c["clean"],
                "failing": c["failing"],
                "internal": c["internal-error"],
                "timeouts": c["timeout"],
                "missed": c["missed-kernels"],
                "usage": c["usage-error"],
            }
        )
    return rows


def library_summary(results: dict) -> dict:
    kernels = results.get("library", [])
    cases = [c for k in kernels for c in k["cases"]]
    statuses = Counter(case_status(c) for c in cases)
    by_kernel = [k for k in kernels if k["cases"]]
    return {
        "kernels": len(kernels),
        "with_cases": len(by_kernel),
        "limits": sum(1 for k in kernels if not k["cases"]),
        "cases": len(cases),
        "compile_ok": sum(1 for c in cases if c["compile"] == "ok"),
        "run_ok": statuses["run ok"],
        "internal": statuses["internal-error"],
        "timeouts": statuses["timeout"],
        "usage": statuses["usage-error"],
        "kernels_compile": sum(
            1 for k in by_kernel if all(c["compile"] == "ok" for c in k["cases"])
        ),
        "kernels_run": sum(
            1 for k in by_kernel if all(case_status(c) == "run ok" for c in k["cases"])
        ),
        "numerics_match": sum(1 for c in cases if c.get("numerics", "").startswith("match")),
        "numerics_mismatch": sum(1 for c in cases if c.get("numerics", "").startswith("mismatch")),
        "numerics_kernels": sum(1 for row in numerics_rows(results) if row["verdict"] == "match"),
        "references": sum(1 for k in kernels if k.get("reference")),
    }


def numerics_rows(results: dict) -> list[dict]:
    """Per library kernel with a numpy reference: its cases compared, matching, mismatching,
    skipped and not compared (the kernel did not run), and a verdict: `match` when every
    compared case matches and at least one was compared."""
    rows = []
    for k in results.get("library", []):
        if not k.get("reference"):
            continue
        verdicts = [c.get("numerics", "") for c in k["cases"]]
        match = sum(1 for v in verdicts if v.startswith("match"))
        mismatch = [v for v in verdicts if v.startswith("mismatch")]
        skipped = [v for v in verdicts if v.startswith("skipped")]
        verdict = "mismatch" if mismatch else "match" if match else "not compared"
        rows.append(
            {
                "kernel": k["name"],
                "reference": k["reference"],
                "cases": len(k["cases"]),
                "match": match,
                "mismatch": len(mismatch),
                "skipped": len(skipped),
                "not_run": len(verdicts) - match - len(mismatch) - len(skipped),
                "verdict": verdict,
                "first": (mismatch or skipped or [""])[0],
            }
        )
    return rows


def _largest_program(results: dict) -> list[str]:
    """The largest compiled program (a core's PROG JSON, inflated) against the reader's cap,
    which should stay at least twice it (docs/security.md)."""
    sizes = [
        (c["prog_bytes"], c["key"])
        for k in results.get("library", [])
        for c in k["cases"]
        if c.get("prog_bytes") is not None
    ]
    if not sizes:
        return []
    size, key = max(sizes)
    margin = MAX_PROG_BYTES / size
    line = (
        f"Largest program: {format_size(size)} of PROG JSON per core, `{key}`; the reader "
        f"refuses more than {format_size(MAX_PROG_BYTES)}, {margin:.1f}× that"
    )
    if margin < 2:
        line += " — **under the 2× margin**: shrink the encoding or raise `MAX_PROG_BYTES`"
    return [line + ".", ""]


def render_markdown(results: dict) -> str:
    meta = results["meta"]
    out = [
        "# Coverage: public NKI kernels",
        "",
        "Written by `make corpus` (`python -m benchmarks.corpus`): `nkic check` on every kernel "
        "file of [aws-neuron/nki-library](https://github.com/aws-neuron/nki-library), "
        "[aws-neuron/nki-samples](https://github.com/aws-neuron/nki-samples) and "
        "[aws-neuron/aws-neuron-sdk](https://github.com/aws-neuron/aws-neuron-sdk), and "
        "`nkic compile` + `nkic run --timing-only` on the NKI Library kernels at the shapes and "
        "dtypes of the library's integration tests (`test/integration/`). How to run it and "
        'what the columns mean: the README, "Measuring against public kernels".',
        "",
        f"* nkic commit: `{meta.get('nkic_commit', '?')}`; run on {meta.get('date', '?')} in "
        f"{meta.get('seconds', 0):.0f} s with {meta.get('jobs', '?')} jobs, "
        f"a limit of {meta.get('timeout', '?')} s of CPU time per command (a command also "
        "stops after 4 times that of wall time; the report says `timeout (CPU)` or "
        "`timeout (wall)`)" + (f", filter `{meta['filter']}`" if meta.get("filter") else ""),
        "* corpus: " + ", ".join(f"{r} `{c}`" for r, c in sorted(meta.get("corpus", {}).items())),
        "",
        "## Summary",
        "",
        "A file is *clean* when `nkic check` reports no error in it (warnings allowed) and "
        "checking each of its kernels by name (`-k`) reports none either, *failing* when it "
        "reports errors. *Kernels missed*: `nkic check` called the file clean, but a kernel of "
        "it checked by name fails, so the file-level check skipped it. Internal errors, "
        "timeouts and missed kernels are bugs in nkic.",
        "",
        "| repository | dialect | kernel files | clean | failing | internal errors | timeouts "
        "| kernels missed |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    totals = Counter()
    for r in summary_rows(results):
        out.append(
            f"| {r['repo']} | {r['dialect']} | {r['files']} | {r['clean']} | {r['failing']} "
            f"| {r['internal']} | {r['timeouts']} | {r['missed']} |"
        )
        totals.update({k: v for k, v in r.items() if isinstance(v, int)})
    out.append(
        f"| **all** | | {totals['files']} | {totals['clean']} | {totals['failing']} "
        f"| {totals['internal']} | {totals['timeouts']} | {totals['missed']} |"
    )
    if totals["usage"]:
        out += ["", f"{totals['usage']} file(s) got a usage error from nkic (see their rows)."]
    lib = library_summary(results)
    out += [
        "",
        "NKI Library kernels at their integration tests' shapes:",
        "",
        "| kernels in the table | with cases | harness limits | cases | compile ok | run ok "
        "| kernels compiling (all cases) | kernels running (all cases) | internal errors "
        "| timeouts | usage errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {lib['kernels']} | {lib['with_cases']} | {lib['limits']} | {lib['cases']} "
        f"| {lib['compile_ok']} | {lib['run_ok']} | {lib['kernels_compile']} "
        f"| {lib['kernels_run']} | {lib['internal']} | {lib['timeouts']} | {lib['usage']} |",
        "",
    ]
    if meta.get("numerics"):
        out += [
            f"Numerics against numpy references: {lib['numerics_match']} case(s) match, "
            f"{lib['numerics_mismatch']} mismatch; {lib['numerics_kernels']} of the "
            f"{lib['references']} kernels with a reference match in every case compared "
            '(section "Numerics").',
            "",
        ]
    else:
        out += ["Numerics were not compared in this run (`make corpus NUMERICS=1` does).", ""]
    out += _largest_program(results)
    out += _beta1_runs(results)
    file_errors = [(f["key"], f.get("errors", [])) for f in results["files"]]
    case_errors = [
        (c["key"], c.get("compile_errors", []))
        for k in results.get("library", [])
        for c in k["cases"]
    ]
    out += ["## Top causes", "", "### `nkic check`, per kernel file", ""]
    out += _causes_table(top_causes(file_errors), "files")
    out += ["### `nkic compile` at the test shapes, per case", ""]
    out += _causes_table(top_causes(case_errors), "cases")
    out += [
        "## Kernel files",
        "",
        "| file | dialect | kernels | status | first error |",
        "|---|---|---|---|---|",
    ]
    for f in results["files"]:
        status = file_status(f)
        first = "" if status == "clean" else _first(f.get("errors", []), f.get("detail", ""))
        kernels = ", ".join(f["kernels"])
        if f.get("how"):
            status += f" (checked with {_cell(how_checked(f['how']))})"
        out.append(f"| {f['key']} | {f['dialect']} | {_cell(kernels)} | {status} | {first} |")
    out += [
        "",
        "## NKI Library kernels at test shapes",
        "",
        "| kernel | entry | case | status | latency (µs) | first error |",
        "|---|---|---|---|---:|---|",
    ]
    for k in results.get("library", []):
        if not k["cases"]:
            out.append(
                f"| {k['name']} | `{k['entry']}` | | harness limit | | {_cell(k['limit'])} |"
            )
        for c in k["cases"]:
            status = case_status(c)
            if c.get("numerics"):
                status += f"; numerics {c['numerics']}"
            if c.get("note"):
                status += f" ({c['note']})"
            lat = f"{c['latency_ns'] / 1000:.2f}" if c.get("latency_ns") else ""
            first = ""
            if c["compile"] != "ok":
                first = _first(c.get("compile_errors", []), c.get("compile_detail", ""))
            elif c.get("run") != "ok":
                first = _first(c.get("run_errors", []), c.get("run_detail", ""))
            out.append(f"| {k['name']} | `{k['entry']}` | {c['id']} | {status} | {lat} | {first} |")
    if meta.get("numerics"):
        out += [
            "",
            "## Numerics",
            "",
            "Each library kernel with a reference in `benchmarks/corpus/references.py` (numpy, "
            "written here from the kernel's documented math and output layout, never copied from "
            "the library) runs on "
            "seeded inputs and its outputs are compared with the reference at the case's "
            "tolerance. *Not run*: the case did not compile or run, so nothing was compared.",
            "",
            "| kernel | reference | cases | match | mismatch | skipped | not run | verdict "
            "| first mismatch or skip |",
            "|---|---|---:|---:|---:|---:|---:|---|---|",
        ]
        for r in numerics_rows(results):
            out.append(
                f"| {r['kernel']} | `{r['reference']}` | {r['cases']} | {r['match']} "
                f"| {r['mismatch']} | {r['skipped']} | {r['not_run']} | {r['verdict']} "
                f"| {_cell(r['first'])} |"
            )
    out += migrate_runs.markdown(results.get("migrate"), results.get("findings"))
    if results.get("findings"):
        out += [
            "",
            "## Problems in the public code itself",
            "",
            "Diagnostics on these are correct, not false positives of nkic.",
            "",
            "| file | problem |",
            "|---|---|",
        ]
        out += [f"| {f['key']} | {_cell(f['note'])} |" for f in results["findings"]]
    checked_with = [f for f in results["files"] if f.get("how")]
    if checked_with:
        out += [
            "",
            "## Files checked as their tests use them",
            "",
            "`nkic check` with its defaults checks every kernel as NKI 0.7, on one core, with "
            "the kernel's parameter defaults. These files are checked with the options their "
            "tests or the library use (`[[check]]` in `benchmarks/corpus/notes.toml`).",
            "",
            "| file | checked with | why |",
            "|---|---|---|",
        ]
        out += [
            f"| {f['key']} | {_cell(how_checked(f['how']))} | {_cell(f['how']['reason'])} |"
            for f in checked_with
        ]
    if results.get("skipped"):
        out += ["", "## Files the harness does not check", "", "| file | reason |", "|---|---|"]
        out += [f"| {s['key']} | {_cell(s['reason'])} |" for s in results["skipped"]]
    return "\n".join(out) + "\n"


def compare(old: dict, new: dict) -> list[str]:
    """What got better or worse from `old` to `new`, one line each, better first. A filtered
    `new` run is compared with the same items of `old` only."""
    lines: list[str] = []
    old_files, new_files = _files(old), _files(new)
    old_cases, new_cases = _cases(old), _cases(new)
    if new.get("meta", {}).get("filter"):
        old_files = {k: v for k, v in old_files.items() if k in new_files}
        old_cases = {k: v for k, v in old_cases.items() if k in new_cases}
    for label, old_items, new_items, rank in (
        ("file", old_files, new_files, FILE_RANK),
        ("case", old_cases, new_cases, CASE_RANK),
    ):
        for key in sorted(set(old_items) | set(new_items)):
            a, b = old_items.get(key), new_items.get(key)
            if a == b:
                continue
            if a is None:
                lines.append(f"new     {label} {key}: {b}")
            elif b is None:
                lines.append(f"gone    {label} {key} (was {a})")
            elif rank.get(b, 9) < rank.get(a, 9):
                lines.append(f"better  {label} {key}: {a} -> {b}")
            elif rank.get(b, 9) > rank.get(a, 9):
                lines.append(f"worse   {label} {key}: {a} -> {b}")
            else:
                lines.append(f"changed {label} {key}: {a} -> {b}")
    order = {"better": 0, "worse": 1, "changed": 2, "new": 3, "gone": 4}
    lines.sort(key=lambda s: order[s.split()[0]])
    old_c, new_c = Counter(old_files.values()), Counter(new_files.values())
    lines.append(
        "files clean: {} -> {}; cases running: {} -> {}".format(
            old_c["clean"],
            new_c["clean"],
            sum(v == "run ok" for v in old_cases.values()),
            sum(v == "run ok" for v in new_cases.values()),
        )
    )
    return lines


def _files(results: dict) -> dict[str, str]:
    return {f["key"]: file_status(f) for f in results.get("files", [])}


def _cases(results: dict) -> dict[str, str]:
    return {c["key"]: case_status(c) for k in results.get("library", []) for c in k["cases"]}


def _beta1_runs(results: dict) -> list[str]:
    """The Beta 1 files compiled and run at their tests' shapes (`beta1_runs.py`)."""
    from .beta1_runs import summary

    runs = results.get("beta1_runs", [])
    if not runs:
        return []
    beta1 = [f["key"] for f in results["files"] if f["dialect"] == "beta1"]
    out = [
        "Beta 1 kernel files compiled and run (`nkic compile` + `nkic run --timing-only`) at the "
        "shapes of their own tests and drivers (`benchmarks/corpus/beta1_shapes.toml`); a file "
        "runs when every kernel the table lists for it does:",
        "",
        "| repository | Beta 1 files | files running | kernels in the table | kernels running |",
        "|---|---:|---:|---:|---:|",
    ]
    for repo, r in summary(runs, beta1).items():
        out.append(
            f"| {repo} | {r['files']} | {r['files_run']} | {r['kernels']} | {r['kernels_run']} |"
        )
    failing = [r for r in runs if r["status"] != "run ok"]
    if failing:
        out += ["", "| Beta 1 kernel | status | first error |", "|---|---|---|"]
        out += [f"| {r['key']} | {r['status']} | {_cell(r.get('detail', ''))} |" for r in failing]
    return out + [""]
