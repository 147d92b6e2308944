"""The interpreter evaluates names and constants, and dispatches statements, without a visitor
call: the diagnostics (code, line, column) and values must be those of the general path."""

from __future__ import annotations

import textwrap

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import specialise
from tests.frontend.util import spec


def _run(tmp_path, body: str, **args):
    path = tmp_path / "k.py"
    path.write_text(
        "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(x):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    sink = DiagnosticSink()
    kernel = specialise(str(path), "k", {"x": spec((128, 64)), **args}, "trn2", sink)
    errors = [(d.code, d.loc.line, d.loc.col) for d in sink.items if d.severity == "error"]
    return kernel, errors


def test_bytes_and_complex_constants_are_reported_at_their_span(tmp_path):
    _, errors = _run(tmp_path, "a = 1\nb = b'xy'\nc = 2j\n")
    assert errors == [("err_unsupported_syntax", 8, 9), ("err_unsupported_syntax", 9, 9)]


def test_undefined_name_is_reported_at_the_name(tmp_path):
    _, errors = _run(tmp_path, "a = 1\nb = (a, a + missing_name)\n")
    assert errors == [("err_undefined_name", 8, 17)]


def test_names_resolve_through_enclosing_scopes_and_rebinding(tmp_path):
    body = """
    n = 3
    def outer(m):
        def inner():
            return n * 100 + m
        return inner()
    assert outer(4) == 304, outer(4)
    n = 5
    assert outer(1) == 501
    fs = [lambda i=i: i * n for i in range(3)]
    assert [f() for f in fs] == [0, 5, 10]
    """
    kernel, errors = _run(tmp_path, body)
    assert errors == [] and kernel is not None


def test_a_statement_error_poisons_its_target_and_later_uses_are_not_reported(tmp_path):
    _, errors = _run(tmp_path, "a = missing_name\nb = a + 1\nc = also_missing\n")
    assert errors == [("err_undefined_name", 7, 9), ("err_undefined_name", 9, 9)]


def test_loop_variable_in_symbolic_loop_is_not_inlined(tmp_path):
    body = """
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.load(x[0:64 + 64 * i, 0:64])
    return out
    """
    _, errors = _run(tmp_path, body)
    assert errors == []


def test_items_of_tuples_and_lists_by_int_index(tmp_path):
    body = """
    t = (4, 5, 6)
    s = [7, 8]
    assert (t[0], t[-1], s[1], s[-2], x.shape[1]) == (4, 6, 8, 7, 64)
    s[0] = 9
    assert s[0] == 9
    a = t[3]
    b = s[-3]
    """
    _, errors = _run(tmp_path, body)
    assert errors == [("err_value_error", 13, 9), ("err_value_error", 14, 9)]
