"""--select / --ignore filtering and `# nkic: noqa` suppression comments."""

from __future__ import annotations

import json

from nkic.diagnostics import Diagnostic, apply_noqa, filter_diagnostics, noqa_codes
from nkic.ir.core import Loc
from nkic.ir.parser import parse_kernel
from nkic.passes.base import PassContext
from nkic.passes.checks import CHECK_PASSES


def diag(code: str, line: int = 1, file: str = "k.py") -> Diagnostic:
    return Diagnostic(code, "m", Loc(file, line, 1, line, 2))


DIAGS = [
    diag("err_shape_mismatch"),
    diag("err_psum_capacity_exceeded"),
    diag("err_psum_bank_violation"),
]


def test_select_and_ignore():
    assert filter_diagnostics(DIAGS) == DIAGS
    assert [d.code for d in filter_diagnostics(DIAGS, select=["err_shape_mismatch"])] == [
        "err_shape_mismatch"
    ]
    assert [d.code for d in filter_diagnostics(DIAGS, select=["err_psum"])] == [
        "err_psum_capacity_exceeded",
        "err_psum_bank_violation",
    ]
    assert [d.code for d in filter_diagnostics(DIAGS, ignore=["err_psum_bank_violation"])] == [
        "err_shape_mismatch",
        "err_psum_capacity_exceeded",
    ]
    assert filter_diagnostics(DIAGS, select=["ALL"], ignore=["err_"]) == []
    assert filter_diagnostics(DIAGS, select=[]) == []


def test_noqa_comment_parsing():
    assert noqa_codes("x = 1") is None
    assert noqa_codes("x = 1  # nkic: noqa") == set()
    assert noqa_codes("x = 1  # nkic: noqa[err_a, err_b]") == {"err_a", "err_b"}
    assert noqa_codes("x = 1  # NKIC:NOQA[err_a]") == {"err_a"}


def test_apply_noqa(tmp_path):
    f = tmp_path / "kernel.py"
    f.write_text(
        "a = 1  # nkic: noqa\n"
        "b = 2  # nkic: noqa[err_shape_mismatch, err_dtype_mismatch]\n"
        "c = 3\n"
        "d = 4  # nkic: noqa[err_dtype_mismatch]\n"
    )
    diags = [
        diag("err_read_before_write", 1, str(f)),
        diag("err_shape_mismatch", 2, str(f)),
        diag("err_unsupported_memory", 2, str(f)),
        diag("err_shape_mismatch", 3, str(f)),
        diag("err_shape_mismatch", 4, str(f)),
        diag("err_shape_mismatch", 1, "missing.py"),
    ]
    assert [(d.code, d.loc.line) for d in apply_noqa(diags)] == [
        ("err_unsupported_memory", 2),
        ("err_shape_mismatch", 3),
        ("err_shape_mismatch", 4),
        ("err_shape_mismatch", 1),
    ]


def test_noqa_on_checked_kernel(tmp_path):
    src = tmp_path / "kernel.py"
    src.write_text(
        "@nki.jit\n"
        "def kernel():\n"
        "    t = nl.ndarray((128, 512), nl.int32, buffer=nl.sbuf)\n"
        "    nisa.memset(dst=t, value=0.5)  # nkic: noqa[err_dtype_mismatch]\n"
        "    nisa.memset(dst=t, value=1.5)  # nkic: noqa[err_shape_mismatch]\n"
    )
    ir = f"""kernel @k target=trn2 {{
  file 0 {json.dumps(str(src))}
  %t = alloc sbuf int32[128, 512] "t" @0:3:5-3:57
  memset(dst=%t[0; [512, 128], [1, 512]], value=0.5) {{}} @0:4:5-4:34
  memset(dst=%t[0; [512, 128], [1, 512]], value=1.5) {{}} @0:5:5-5:34
  return
}}"""
    k = parse_kernel(ir)
    ctx = PassContext("trn2")
    for p in CHECK_PASSES:
        p.run(k, ctx)
    assert [d.loc.line for d in ctx.sink.items] == [4, 5]
    assert [(d.code, d.loc.line) for d in apply_noqa(ctx.sink.items)] == [("err_dtype_mismatch", 5)]
