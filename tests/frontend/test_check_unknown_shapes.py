"""`nkic check` on kernels whose parameters have no shapes (no `--arg`, no annotation): every
shape-independent check over the kernel and the helpers it reaches, plus one
`nkic_shapes_unknown` note at the kernel's name; exit code 0 when nothing else is found."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

import nkic
from nkic.cli import cli
from nkic.frontend import TensorSpec

ROOT = Path(__file__).resolve().parents[2]
FIVE = ROOT / "tests" / "cli" / "kernels" / "five_errors.py"


def write(tmp_path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def codes(diags) -> list[tuple[str, int, int]]:
    return [(d.code, d.loc.line, d.loc.col) for d in diags]


def test_a_clean_kernel_without_shapes_gets_only_the_note(examples, tmp_path):
    # a copy: the repository's [tool.nkic.args] gives the example its shapes
    kernel = tmp_path / "tensor_add.py"
    kernel.write_text((examples / "tensor_add.py").read_text())
    res = CliRunner().invoke(cli, ["check", str(kernel), "--format", "json"])
    assert res.exit_code == 0
    [note] = json.loads(res.output)
    assert (note["code"], note["severity"], note["line"], note["col"]) == (
        "nkic_shapes_unknown", "note", 9, 5
    )  # fmt: skip
    assert note["end_col"] == 5 + len("tensor_add")
    assert "'a', 'b'" in note["message"] and "bounds" in note["message"]
    assert "--arg a=" in note["hint"] and "nt.tensor[" in note["hint"]


def test_shape_independent_errors_are_reported_at_the_same_spans_as_with_shapes():
    without = codes(nkic.check(FIVE))
    with_shapes = codes(nkic.check(FIVE, a=TensorSpec((128, 64))))
    assert without == [
        ("err_unexpected_keyword", 11, 33),
        ("err_undefined_name", 13, 46),
        ("err_unknown_api", 19, 43),
        ("nkic_shapes_unknown", 7, 5),
    ]
    assert set(without[:3]) <= set(with_shapes)
    assert "nkic_shapes_unknown" not in {c for c, _, _ in with_shapes}


def test_helpers_in_the_file_and_in_helper_modules_are_checked(tmp_path):
    write(
        tmp_path,
        "ops.py",
        """\
        import nki.language as nl


        def scale(t):
            return nl.multiply(t, 2.0, dtyp=nl.float32)


        def unused(t):
            return nl.bogus(t)
        """,
    )
    path = write(
        tmp_path,
        "kernel.py",
        """\
        import nki
        import nki.isa as nisa
        import nki.language as nl

        from ops import scale


        def helper(t, n):
            nisa.activation(dst=t, op=nl.exp, data=t, sclae=2.0)
            if n is 3:
                pass
            return missing_name


        def passed_on(t):
            return t * not_defined


        @nki.jit
        def kernel(a, b):
            x = nl.lod(a)
            y = helper(x, 3, extra=1)
            z = scale(y)
            f = lambda v: v + also_missing
            rows = [i for i in range(4)]
            g = [passed_on][0]
            return nl.sofmax(z)
        """,
    )
    assert codes(nkic.check(path, nki="0.3")) == [  # `is 3`: a 0.3 subset rule
        ("err_unknown_api", 21, 9),  # the kernel first
        ("err_unexpected_keyword", 22, 22),
        ("err_undefined_name", 24, 23),
        ("err_unknown_api", 27, 12),
        ("err_unsupported_syntax", 10, 8),  # then helper, scale (ops.py), passed_on
        ("err_unexpected_keyword", 9, 47),
        ("err_undefined_name", 12, 12),
        ("err_unexpected_keyword", 5, 32),
        ("err_undefined_name", 16, 16),
        ("nkic_shapes_unknown", 20, 5),
    ]
    hints = {d.code + str(d.loc.line): d.hint for d in nkic.check(path)}
    assert hints["err_unknown_api21"] == "did you mean 'load'?"
    assert hints["err_unknown_api27"] == "did you mean 'softmax'?"


def test_names_bound_anywhere_in_scope_are_not_flagged(tmp_path):
    path = write(
        tmp_path,
        "kernel.py",
        """\
        import math

        import nki
        import nki.language as nl

        LIMIT = 4


        @nki.jit
        def kernel(a):
            total = 0
            for i in range(LIMIT):
                total += i
            squares = {f"k{k}": k * k for k in range(3)}

            def inner(v, w=total):
                return v + w + later

            later = math.ceil(2.5)
            if (n := len(squares)) > 2:
                pass
            inner(n)
        """,
    )
    assert codes(nkic.check(path)) == [("nkic_shapes_unknown", 10, 5)]


def test_kernel_signature_rules_and_nested_kernel_calls(tmp_path):
    path = write(
        tmp_path,
        "kernel.py",
        """\
        import nki


        @nki.jit
        def sub(a):
            return a


        @nki.jit
        def kernel(a, *, b):
            return sub(a)
        """,
    )
    found = codes(nkic.check(path, kernel="kernel"))
    assert found == [
        ("err_unsupported_syntax", 10, 18),
        ("err_nested_kernel_call", 11, 12),
        ("nkic_shapes_unknown", 10, 5),
    ]


def test_shapes_from_args_or_annotations_specialise_normally(tmp_path):
    path = write(
        tmp_path,
        "kernel.py",
        """\
        import nki
        import nki.language as nl
        import nki.typing as nt


        @nki.jit
        def kernel(a: nt.tensor[128, 64], b, n=2):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.add(nl.load(a), nl.load(b)))
            return out
        """,
    )
    [note] = nkic.check(path)
    assert note.code == "nkic_shapes_unknown" and "'b' has" in note.message
    assert "'a'" not in note.message and "'n'" not in note.message
    assert nkic.check(path, b=TensorSpec((128, 64))) == []
    bad = nkic.check(path, b=TensorSpec((128, 32)))
    assert [d.code for d in bad] == ["err_shape_mismatch"]


def test_every_kernel_of_a_file_is_checked(tmp_path):
    path = write(
        tmp_path,
        "kernel.py",
        """\
        import nki
        import nki.language as nl


        @nki.jit
        def first(a):
            return nl.lod(a)


        @nki.jit
        def second(a):
            return nl.load(a)
        """,
    )
    res = CliRunner().invoke(cli, ["check", str(path), "--format", "json"])
    assert res.exit_code == 1
    assert [(d["code"], d["line"]) for d in json.loads(res.output)] == [
        ("err_unknown_api", 7),
        ("nkic_shapes_unknown", 6),
        ("nkic_shapes_unknown", 11),
    ]
