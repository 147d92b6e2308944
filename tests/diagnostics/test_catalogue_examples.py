"""Every catalogue example is a real kernel: `bad` reports its code where it is marked, `good`
reports nothing.

Each example (nkic/codes.py) is written after `EXAMPLE_IMPORTS` into a file and checked with
`nkic.check`, as `nkic check` would. The failing example marks its primary location with a
trailing `# <- CODE` (the line's first non-blank column) or with a comment line `#   ^ CODE`
under the offending line (the caret's column); one without a marker is reported at the top of
the file. A first line
`# nkic check kernel.py [-k NAME] [--arg NAME=SPEC]... [--target T] [--nki V]` gives the
command line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import nkic
from nkic.codes import CODES, EXAMPLE_IMPORTS
from nkic.driver import DEFAULT_TARGET, compile_file
from nkic.frontend import parse_arg_spec

#: Codes that no kernel file produces by itself, with the reason; each has a direct test below.
EXEMPT = {
    "err_file_not_found": "needs a path that does not exist, not a kernel; see test_file_not_found",
    "nkic_internal_error": "reports a bug in nkic, which no correct kernel may trigger; "
    "see test_internal_error_is_a_diagnostic",
    "nkic_migrate_manual_step": "reported by nkic migrate on Beta 1 source, never by check; "
    "see tests/migrate",
    "err_control_flow_condition_depending_on_arange": "Beta 1 only; see "
    "tests/diagnostics/test_beta1_examples.py",
    "err_unsupported_mixing_basic_advanced_tensor_indexing": "Beta 1 only; see "
    "tests/diagnostics/test_beta1_examples.py",
    "err_nested_kernel_with_spmd_grid": "Beta 1 only; see tests/diagnostics/test_beta1_examples.py",
    "err_failed_to_infer_tile_from_local_tensor": "Beta 1 only; see "
    "tests/diagnostics/test_beta1_examples.py",
    "err_1d_arange_not_supported": "Beta 1 only; see tests/diagnostics/test_beta1_examples.py",
    "err_indirect_indices_free_dim": "Beta 1 only; see tests/diagnostics/test_beta1_examples.py",
    "err_cannot_assign_to_index": "Beta 1 only; see tests/diagnostics/test_beta1_examples.py",
}

#: (code, "bad" | "good") whose example exposes a known compiler bug: strict xfail + reason.
KNOWN_BUGS: dict[tuple[str, str], str] = {}

PRELUDE = EXAMPLE_IMPORTS + "\n"
FIRST_LINE = PRELUDE.count("\n") + 1  # file line of the example's first line

_ARROW = re.compile(r"#\s*<-\s*([a-z0-9_]+)\s*$")
_CARET = re.compile(r"^\s*#\s*\^\s*([a-z0-9_]+)\b")


def write_example(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kernel.py"
    path.write_text(PRELUDE + text + "\n", encoding="utf-8")
    return path


def command(text: str) -> dict:
    """The keyword arguments of `nkic.check` given by a `# nkic check ...` first line."""
    kw: dict = {"kernel": None, "target": DEFAULT_TARGET}
    first = text.splitlines()[0] if text else ""
    if not first.startswith("# nkic check"):
        return kw
    toks = shlex.split(first[1:])[2:]
    for opt, value in zip(toks, toks[1:]):
        if opt == "-k":
            kw["kernel"] = value
        elif opt == "--target":
            kw["target"] = value
        elif opt == "--lnc":
            kw["lnc"] = int(value)
        elif opt == "--nki":
            kw["nki"] = value
        elif opt == "--arg":
            name, _, spec = value.partition("=")
            kw[name] = parse_arg_spec(spec)
    return kw


def marked_location(code: str, text: str) -> tuple[int, int]:
    """(line, column) in the written file of the marked primary location."""
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := _CARET.match(line):
            assert i > 0, "a caret line must follow the line it marks"
            found.append((m.group(1), FIRST_LINE + i - 1, line.index("^") + 1))
        elif m := _ARROW.search(line):
            found.append((m.group(1), FIRST_LINE + i, len(line) - len(line.lstrip()) + 1))
    assert len(found) <= 1, f"more than one marker: {found}"
    if not found:
        return (1, 1)
    marked, line, col = found[0]
    assert marked == code, f"the marker names {marked}, not {code}"
    return line, col


def checked(path: Path, code: str, text: str) -> list:
    """`nkic check` of an example. Examples loop with `nl.affine_range` and its kin, which NKI
    0.7 (the default) deprecates: that warning belongs to the examples of its own code only."""
    diags = nkic.check(path, **command(text))
    return [d for d in diags if d.code != "nkic_deprecated_api" or code == d.code]


def show(diags) -> str:
    return "\n".join(
        f"  {d.severity} {d.code} at {d.loc.line}:{d.loc.col}: {d.message}" for d in diags
    )


def _params(kind: str):
    out = []
    for code in CODES:
        if code in EXEMPT:
            continue
        reason = KNOWN_BUGS.get((code, kind))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(code, id=code, marks=marks))
    return out


def test_every_code_has_an_example_or_a_documented_exemption():
    assert set(EXEMPT) <= set(CODES)
    assert all(reason for reason in EXEMPT.values())
    assert {code for code, _ in KNOWN_BUGS} <= set(CODES) - set(EXEMPT)


@pytest.mark.parametrize("code", _params("bad"))
def test_bad_example_reports_its_code_at_the_marked_place(code, tmp_path):
    info = CODES[code]
    path = write_example(tmp_path, info.bad)
    diags = checked(path, code, info.bad)
    primary = [d for d in diags if d.code == code]
    assert primary, f"{code} not reported; got:\n{show(diags)}"
    d = primary[0]
    assert d.severity == info.severity
    assert d.loc.file == str(path) or Path(d.loc.file).resolve() == path.resolve()
    assert (d.loc.line, d.loc.col) == marked_location(code, info.bad), show(diags)
    others = [d for d in diags if d.code != code and d.severity != "note"]
    assert not others, f"follow-on diagnostics besides {code}:\n{show(others)}"


@pytest.mark.parametrize("code", _params("good"))
def test_good_example_is_clean(code, tmp_path):
    info = CODES[code]
    path = write_example(tmp_path, info.good)
    diags = checked(path, code, info.good)
    assert not diags, f"the fixed example of {code} reports:\n{show(diags)}"


# ---------------------------------------------------------------------------------------------
# the exempt codes, and command-line-only paths of the others


def test_file_not_found(tmp_path):
    missing = tmp_path / "kernels" / "matmull.py"
    diags = nkic.check(missing)
    assert [(d.code, d.loc.line, d.loc.col) for d in diags] == [("err_file_not_found", 1, 1)]
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(missing)
    assert [d.code for d in e.value.diagnostics] == ["err_file_not_found"]


def test_internal_error_is_a_diagnostic(tmp_path, monkeypatch):
    """A crash inside nkic surfaces as `nkic_internal_error` at the statement, not a traceback."""
    from nkic.frontend import nki_api

    def crash(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(nki_api, "bind_isa", crash)
    text = CODES["err_missing_argument"].good  # a clean kernel whose last line is a nisa call
    path = write_example(tmp_path, text)
    diags = nkic.check(path)
    assert [(d.code, d.loc.line) for d in diags] == [
        ("nkic_internal_error", FIRST_LINE + len(text.splitlines()) - 1)
    ]
    assert "RuntimeError: injected" in diags[0].message


def test_kernel_not_found_when_compiling_a_file_without_kernels(tmp_path):
    path = write_example(tmp_path, "def helper(a):\n    return a\n")
    assert nkic.check(path) == []  # a helper module is clean for `nkic check`
    res = compile_file(str(path), None, {}, DEFAULT_TARGET, emit=False)
    assert [(d.code, d.loc.line, d.loc.col) for d in res.diagnostics] == [
        ("err_kernel_not_found", 1, 1)
    ]


def test_syntax_error_with_a_kernel_name(tmp_path):
    """`-k` on a file that does not parse reports the syntax error too."""
    text = CODES["err_syntax_error"].bad
    path = write_example(tmp_path, text)
    diags = nkic.check(path, kernel="kernel")
    assert [(d.code, d.loc.line, d.loc.col) for d in diags] == [
        ("err_syntax_error", *marked_location("err_syntax_error", text))
    ]


# ---------------------------------------------------------------------------------------------
# compiler bugs the examples exposed (fixed): each reported once, at the right place


@pytest.mark.parametrize(
    ("name", "code"),
    [("arange", "err_unsupported_api"), ("arrange", "err_unknown_api")],
)
def test_from_nki_import_of_a_missing_name_fails_at_the_import(tmp_path, name, code):
    """It used to be accepted, and its first use reported "no module named 'nki'"."""
    text = (
        f"from nki.language import load, {name}\n\n"
        "@nki.jit\n"
        "def kernel(a: nt.tensor[128, 512]):\n"
        "    i = load(a)\n"
    )
    diags = nkic.check(write_example(tmp_path, text))
    assert [(d.code, d.loc.line, d.loc.col) for d in diags] == [(code, FIRST_LINE, 1)]


def test_a_failed_return_does_not_cascade_into_the_caller(tmp_path):
    """A `return` whose value failed used to return None, so `f(x) + 1` in the caller was a
    second error (`err_type_error`: NoneType + int)."""
    text = (
        "def width(a):\n"
        "    return a.shpe[1]\n\n"
        "@nki.jit\n"
        "def kernel(a: nt.tensor[128, 512]):\n"
        "    n = width(a) + 1\n"
    )
    diags = nkic.check(write_example(tmp_path, text))
    assert [(d.code, d.loc.line) for d in diags] == [("err_attribute_error", FIRST_LINE + 1)]
