"""Diagnostics: every user error is a Diagnostic with a code and an exact span.

Each kernel in kernels/errors/ marks its offending lines with `# expect: CODE@COLUMN`; the
run must report exactly those (one report per root cause, recovering after each)."""

from __future__ import annotations

import re

import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import parse_arg_spec, specialise
from nkic.frontend import specialiser as specialiser_module

from .util import KERNELS, line_of, run, spec

ERRORS = KERNELS / "errors"
CASES = sorted(p.name for p in ERRORS.glob("*.py") if "# expect:" in p.read_text())


def expectations(path):
    lines = path.read_text().splitlines()
    args = {}
    kernel = None
    for line in lines:
        if line.startswith("# args:"):
            for item in line.split(":", 1)[1].split():
                name, value = item.split("=", 1)
                args[name] = parse_arg_spec(value)
        if line.startswith("# kernel:"):
            kernel = line.split(":", 1)[1].strip()
    expected = []
    for n, line in enumerate(lines, 1):
        m = re.search(r"# expect: (.*)$", line)
        if m:
            for item in m.group(1).split(","):
                code, col = item.strip().split("@")
                expected.append((code, n, int(col)))
    return args, kernel, sorted(expected)


#: Codes the error kernels expect as warnings (the language inlines a kernel called by a kernel).
WARNINGS = {"err_nested_kernel_call"}


@pytest.mark.parametrize("name", CASES)
def test_error_kernel_reports_exactly_the_expected_diagnostics(name):
    path = ERRORS / name
    args, kernel, expected = expectations(path)
    sink = DiagnosticSink()
    result = specialise(str(path), kernel, args, "trn2", sink, language="0.3")  # its subset
    assert result is None
    got = sorted((d.code, d.loc.line, d.loc.col) for d in sink.items if d.loc.file == str(path))
    assert got == expected
    for d in sink.items:
        severity = "warning" if d.code in WARNINGS else "error"
        assert d.severity == severity and d.message and d.hint
        assert d.loc.end_line > d.loc.line or d.loc.end_col > d.loc.col


def test_spans_cover_the_offending_node():
    _, diags = run("errors/names.py", x=spec((128, 512)))
    d = next(d for d in diags if d.code == "err_undefined_name")
    line = line_of("errors/names.py", "undefined + 1")
    assert (d.loc.line, d.loc.col, d.loc.end_line, d.loc.end_col) == (line, 9, line, 18)
    d = next(d for d in diags if d.code == "err_unknown_api" and "ndarry" in d.message)
    assert d.hint == "did you mean 'ndarray'?"


def test_errors_in_helpers_carry_the_call_chain():
    _, diags = run("errors/chain.py", x=spec((128, 512)))
    assert len(diags) == 1  # same root cause reached twice through fill_twice: one report
    (d,) = diags
    assert d.code == "err_invalid_argument" and "nisa.engine" in d.hint
    assert d.loc.file.endswith("chain_helpers.py") and (d.loc.line, d.loc.col) == (5, 35)
    assert [(s.file.rsplit("/", 1)[1], s.line, s.col) for s in d.loc.stack] == [
        ("chain.py", 10, 5),
        ("chain_helpers.py", 9, 5),
    ]


def test_kernel_selection(tmp_path):
    two = tmp_path / "two.py"
    two.write_text("import nki\n\n@nki.jit\ndef a(x):\n    pass\n\n@nki.jit\ndef b(x):\n    pass\n")
    sink = DiagnosticSink()
    assert specialise(str(two), None, {}, "trn2", sink) is None
    (d,) = sink.items
    assert d.code == "err_kernel_not_found" and "a, b" in d.message
    sink = DiagnosticSink()
    assert specialise(str(two), "c", {}, "trn2", sink) is None
    assert sink.items[0].code == "err_kernel_not_found"
    none = tmp_path / "none.py"
    none.write_text("x = 1\n")
    sink = DiagnosticSink()
    assert specialise(str(none), None, {}, "trn2", sink) is None
    assert sink.items[0].code == "err_kernel_not_found"


def test_syntax_error_is_a_diagnostic(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import nki\n\n@nki.jit\ndef k(x):\n    return (x\n")
    sink = DiagnosticSink()
    assert specialise(str(bad), None, {}, "trn2", sink) is None
    (d,) = sink.items
    assert d.code == "err_syntax_error" and d.loc.line == 5


def test_missing_and_unknown_kernel_arguments():
    _, diags = run("creation.py", y=spec((128, 512)))
    assert sorted((d.code, d.loc.line, d.loc.col) for d in diags) == [
        ("err_missing_argument", 9, 14),
        ("err_unexpected_keyword", 9, 5),
    ]


def test_list_kernel_arguments_are_rejected_before_0_7():
    sink = DiagnosticSink()
    args = {"x": spec((128, 256)), "mode": ["a"]}
    specialise(str(KERNELS / "meta_control.py"), None, args, "trn2", sink, language="0.6")
    diags = sink.items
    assert [(d.code, d.loc.line, d.loc.col) for d in diags] == [("err_unsupported_syntax", 9, 16)]
    assert "NKI 0.6" in diags[0].message and "0.7" in diags[0].hint


def test_internal_errors_become_diagnostics(monkeypatch):
    def boom(self, node):
        raise RuntimeError("boom")

    monkeypatch.setattr(specialiser_module.Specialiser, "visit_Assert", boom)
    _, diags = run("creation.py", x=spec((128, 512)))
    assert diags and all(d.code == "nkic_internal_error" for d in diags)
    assert diags[0].loc.line == 10


def test_kernel_replaced_by_a_decorator(tmp_path):
    f = tmp_path / "deco.py"
    f.write_text(
        "import nki\n\ndef weird(f):\n    return 3\n\n@nki.jit\n@weird\ndef k(x):\n    pass\n"
    )
    sink = DiagnosticSink()
    assert specialise(str(f), None, {}, "trn2", sink) is None
    assert [(d.code, d.loc.line, d.loc.col) for d in sink.items] == [
        ("err_unsupported_syntax", 8, 5)
    ]


ITERATION_KERNEL = """import nki
import nki.language as nl
from helper import load_rows


@nki.jit
def k(x):
    y = nl.ndarray((512, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(2):
        for i in range(5):
            assert j == 0 or i < 3, "row block too far"
            t = load_rows(x, i)
            nl.store(y[i * 128 : (i + 1) * 128, :], t)
    return y
"""

ITERATION_HELPER = """import nki.language as nl


def load_rows(x, i):
    for half in range(2):
        if i == 4 and half == 1:
            return nl.load(x[i * 128 : (i + 1) * 128, :])
    return nl.load(x[0:128, :])
"""


def test_an_error_in_an_unrolled_loop_names_its_first_failing_iteration(tmp_path):
    """A plain `range` loop is unrolled; its errors name the iteration as a symbolic loop's
    bounds errors do, loop variables by their source names, the helper's loop by file."""
    (tmp_path / "k.py").write_text(ITERATION_KERNEL)
    (tmp_path / "helper.py").write_text(ITERATION_HELPER)
    sink = DiagnosticSink()
    specialise(str(tmp_path / "k.py"), "k", {"x": spec((512, 128))}, "trn2", sink)
    errors = [(d.code, d.loc.line, d.message) for d in sink.items if d.severity == "error"]
    oob = "slice 512:640 is out of bounds for dimension 0 of size 512"
    assert errors == [
        (
            "err_tensor_access_out_of_bound",
            7,
            f"{oob} (iteration j=0, i=4, half=1 of the loops at lines k.py:9, k.py:10, helper.py:5)",
        ),
        (
            "err_tensor_access_out_of_bound",
            13,
            f"{oob} (iteration j=0, i=4 of the loops at lines 9, 10)",
        ),
        (
            "err_assert_failed",
            11,
            "assertion failed: row block too far (iteration j=1, i=3 of the loops at lines 9, 10)",
        ),
    ]
