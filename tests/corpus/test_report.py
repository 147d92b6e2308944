"""coverage.md rendering, cause grouping and run comparison, from results written here."""

from __future__ import annotations

from nkirt.limits import format_size
from nkirt.neff import MAX_PROG_BYTES

from benchmarks.corpus.report import compare, pattern, render_markdown, top_causes


def err(code, message, file="nki-library/src/a.py", line=3):
    return {"code": code, "message": message, "file": file, "line": line}


def results(**overrides):
    r = {
        "meta": {
            "date": "2026-01-01 00:00 UTC",
            "seconds": 12.0,
            "jobs": 2,
            "timeout": 60,
            "numerics": True,
            "filter": "",
            "nkic_commit": "abc",
            "corpus": {"nki-library": "111", "nki-samples": "222"},
        },
        "files": [
            {
                "key": "nki-library/src/a.py",
                "repo": "nki-library",
                "dialect": "current",
                "kernels": ["a"],
                "status": "diagnostics",
                "errors": [
                    err("err_import_error", "'os' is not available in kernels"),
                    err("err_import_error", "'pkgutil' is not available in kernels"),
                ],
                "detail": "",
            },
            {
                "key": "nki-library/src/b.py",
                "repo": "nki-library",
                "dialect": "current",
                "kernels": ["b", "b2"],
                "status": "ok",
                "errors": [],
                "detail": "",
            },
            {
                "key": "nki-samples/c.py",
                "repo": "nki-samples",
                "dialect": "beta1",
                "kernels": ["c"],
                "status": "internal-error",
                "errors": [],
                "detail": "internal error: KeyError: 'x'",
            },
            {
                "key": "nki-samples/d.py",
                "repo": "nki-samples",
                "dialect": "beta1",
                "kernels": ["d"],
                "status": "timeout",
                "errors": [],
                "detail": "no result in 60 s",
            },
            {
                "key": "nki-samples/g.py",
                "repo": "nki-samples",
                "dialect": "beta1",
                "kernels": ["g"],
                "status": "missed-kernels",
                "errors": [err("err_unsupported_api", "Beta 1 is not supported")],
                "detail": "-k g: diagnostics",
            },
        ],
        "library": [
            {
                "name": "k",
                "file": "src/k.py",
                "entry": "k",
                "test": "t.py",
                "limit": "",
                "reference": "k_ref",
                "cases": [
                    {
                        "key": "k[a]",
                        "id": "a",
                        "compile": "ok",
                        "run": "ok",
                        "latency_ns": 2500.0,
                        "numerics": "match (max abs error 0)",
                    },
                    {
                        "key": "k[b]",
                        "id": "b",
                        "compile": "diagnostics",
                        "compile_errors": [err("err_x", "shape (4, 8) is | wrong", "src/k.py", 9)],
                        "note": "the test runs at LNC=2",
                    },
                ],
            },
            {
                "name": "cfg",
                "file": "src/c.py",
                "entry": "c",
                "test": "t.py",
                "limit": "takes a config dataclass",
                "cases": [],
            },
        ],
        "skipped": [{"key": "nki-samples/e.py", "reason": "a torch training script"}],
        "findings": [{"key": "nki-samples/f.py", "note": "does not parse"}],
    }
    r.update(overrides)
    return r


def test_pattern_blanks_names_numbers_and_shapes():
    assert pattern("'os' is not available") == pattern("'pkgutil' is not available")
    assert pattern("shape (4, 8) exceeds 128 partitions") == "shape (…) exceeds N partitions"
    assert pattern("float8_e4m3 is unknown") == "float8_e4m3 is unknown"


def test_top_causes_count_each_item_once_per_cause():
    causes = top_causes(
        [
            ("f1", [err("e1", "'os' missing"), err("e1", "'sys' missing"), err("e2", "bad")]),
            ("f2", [err("e2", "bad")]),
            ("f3", [err("e2", "bad")]),
        ]
    )
    assert [(c["code"], c["affected"], c["first"]) for c in causes] == [
        ("e2", 3, 2),
        ("e1", 1, 1),
    ]


def test_markdown_summary_rows_and_limits():
    md = render_markdown(results())
    assert "| nki-library | current | 2 | 1 | 1 | 0 | 0 | 0 |" in md
    assert "| nki-samples | beta1 | 3 | 0 | 0 | 1 | 1 | 1 |" in md
    assert "| **all** | | 5 | 1 | 1 | 1 | 1 | 1 |" in md
    assert "| nki-samples/g.py | beta1 | g | missed-kernels | `err_unsupported_api`: Beta" in md
    # library: 2 kernels, 1 with cases, 1 limit, 2 cases, 1 compiles, 1 runs
    assert "| 2 | 1 | 1 | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in md
    assert "1 case(s) match, 0 mismatch; 1 of the 1 kernels with a reference match" in md
    # the numerics section: k's second case did not compile, so it was not compared
    assert "| k | `k_ref` | 2 | 1 | 0 | 0 | 1 | match |  |" in md
    assert "| nki-library/src/a.py | current | a | failing | `err_import_error`: 'os' is" in md
    assert "| nki-library/src/b.py | current | b, b2 | clean |  |" in md
    assert "| internal-error | internal error: KeyError: 'x' |" in md
    assert "| k | `k` | a | run ok; numerics match (max abs error 0) | 2.50 |  |" in md
    # a '|' in a message must not break the table
    assert "shape (4, 8) is \\| wrong (src/k.py:9)" in md
    assert "compile failing (the test runs at LNC=2)" in md
    assert "| cfg | `c` | | harness limit | | takes a config dataclass |" in md
    assert "| nki-samples/e.py | a torch training script |" in md
    assert "| nki-samples/f.py | does not parse |" in md
    # the two import errors of a.py are one cause
    assert "| `err_import_error` | '…' is not available in kernels | 1 | 1 |" in md


def test_compare_reports_better_worse_new_and_gone():
    old = results()
    new = results()
    new["files"][0] = dict(new["files"][0], status="ok", errors=[])
    new["files"][1] = dict(new["files"][1], status="timeout")
    new["files"].pop(3)
    new["library"][0]["cases"][1] = dict(new["library"][0]["cases"][1], compile="ok", run="ok")
    new["files"].append(dict(old["files"][1], key="nki-library/src/new.py"))
    lines = compare(old, new)
    assert lines[:2] == [
        "better  file nki-library/src/a.py: failing -> clean",
        "better  case k[b]: compile failing -> run ok",
    ]
    assert "worse   file nki-library/src/b.py: clean -> timeout" in lines
    assert "new     file nki-library/src/new.py: clean" in lines
    assert "gone    file nki-samples/d.py (was timeout)" in lines
    assert lines[-1] == "files clean: 1 -> 2; cases running: 1 -> 2"


def test_a_filtered_run_is_compared_with_the_same_items_only():
    old = results()
    new = results()
    new["meta"] = dict(new["meta"], filter="a.py")
    new["files"] = [dict(old["files"][0], status="ok", errors=[])]
    new["library"] = []
    assert compare(old, new) == [
        "better  file nki-library/src/a.py: failing -> clean",
        "files clean: 0 -> 1; cases running: 0 -> 0",
    ]


def test_the_largest_program_is_reported_against_the_readers_cap():
    r = results()
    cases = r["library"][0]["cases"]
    cases[0]["prog_bytes"] = MAX_PROG_BYTES // 4
    md = render_markdown(r)
    size = format_size(MAX_PROG_BYTES // 4)
    assert f"Largest program: {size} of PROG JSON per core, `k[a]`" in md
    assert "4.0× that." in md and "under the 2× margin" not in md
    cases[0]["prog_bytes"] = MAX_PROG_BYTES * 2 // 3
    assert "1.5× that — **under the 2× margin**" in render_markdown(r)
    del cases[0]["prog_bytes"]  # results written before the size was recorded
    assert "Largest program" not in render_markdown(r)
