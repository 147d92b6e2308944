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


def test_method_calls_see_the_instance_and_class_bindings_of_each_call(tmp_path):
    # one call node, `v.get()`, evaluated under three bindings: the class's method, an
    # instance attribute that shadows it, then (on a new instance) a method the class rebound
    body = """
    class Box(nl.NKIObject):
        n: int = 1

        def get(self):
            return self.n * 10

    def doubled(self):
        return self.n * 20

    seen = []
    v = Box(2)
    for step in range(3):
        if step == 1:
            v.get = lambda: 7
        if step == 2:
            Box.get = doubled
            v = Box(3)
        seen.append(v.get())
    assert seen == [20, 7, 60], seen
    """
    kernel, errors = _run(tmp_path, body)
    assert errors == [] and kernel is not None


def test_f_strings_format_every_kind_of_value_and_locate_their_errors(tmp_path):
    body = """
    t = (1, 2)
    s = f"{1.5} {t} {None} {'s'} {3} {True} {t[0]:>3} {'q'!r}"
    assert s == "1.5 (1, 2) None s 3 True   1 'q'", s
    bad = f"a {t[5]} b"
    """
    kernel, errors = _run(tmp_path, body)
    assert errors == [("err_value_error", 11, 16)]


def test_comparison_chains_and_identity_tests(tmp_path):
    body = """
    a, b, c = 1, 2, 3
    assert a < b < c and not (a < c < b) and (a < b) is True
    assert (a == 1.0) and not (b != 2) and "x" < "y"
    n = None
    assert n is None and a is not None and not (n is not None)
    assert a < b is not None
    """
    kernel, errors = _run(tmp_path, body)
    assert errors == [] and kernel is not None


def test_negative_and_out_of_range_items_of_sequences(tmp_path):
    body = """
    t = (4, 5, 6)
    lst = [7, 8]
    assert t[-1] == 6 and t[-3] == 4 and lst[-2] == 7 and lst[1] == 8
    bad = t[-4]
    """
    kernel, errors = _run(tmp_path, body)
    assert errors == [("err_value_error", 11, 11)]


def test_plain_views_of_ints_slices_and_ds_are_those_of_the_general_path(monkeypatch):
    import itertools

    from nkic.frontend.tensors import TensorView
    from nkic.frontend.values import DynSlice, UserError
    from nkic.ir.core import Tensor

    items = [0, 3, -1, 9, slice(None), slice(2, 6), slice(-4, None), slice(1, 7, 2),
             DynSlice(0, 8), DynSlice(2, 3), DynSlice(6, 3), DynSlice(-1, 1), DynSlice(4, 0),
             DynSlice(True, 2)]  # fmt: skip

    def views(buffer):
        whole = TensorView.whole(Tensor("t", buffer, "float32", (8, 8)))
        out = []
        for key in itertools.product(items, repeat=2):
            try:
                v = whole.index(key)
                out.append((key, str(v.offset), v.pattern, v.dtype))
            except UserError as e:
                out.append((key, e.code))
        return out

    for buffer in ("sbuf", "hbm"):
        fast = views(buffer)
        with monkeypatch.context() as m:
            m.setattr(TensorView, "_index_plain", lambda self, key: None)
            assert fast == views(buffer)
