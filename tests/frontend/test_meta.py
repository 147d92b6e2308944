"""Stage B: the meta-programming language. Each kernel asserts its own compile-time results,
so a failing construct shows up as an err_assert_failed at the offending line."""

from __future__ import annotations

import pytest

from .util import compile_ok, line_of, opcodes, run, spec


@pytest.mark.parametrize(
    "name", ["meta_values.py", "meta_functions.py", "meta_classes.py", "meta_control.py"]
)
def test_meta_kernel_specialises_without_diagnostics(name):
    compile_ok(name, x=spec((128, 256)))


def test_print_runs_at_compile_time(capsys):
    compile_ok("meta_values.py", x=spec((128, 256)))
    err = capsys.readouterr().err
    assert "values ok 7 (3, 4) NkiTensor(shape=(128, 256), dtype=float32, buffer=hbm" in err
    assert "(128, 256)\n" in err


def test_helpers_are_inlined_with_call_stacks():
    k = compile_ok("meta_functions.py", x=spec((128, 256)))
    copies = [i for i in k.instructions() if i.opcode == "tensor_copy"]
    assert [c.attrs["engine"] for c in copies] == ["unknown", "scalar"]
    f = "meta_functions.py"
    assert [c.loc.line for c in copies] == [
        line_of(f, "nisa.tensor_copy(dst=dst, src=src)"),
        line_of(f, "nisa.tensor_copy(dst=dst, src=src, engine=engine)"),
    ]
    assert [[s.line for s in c.loc.stack] for c in copies] == [
        [line_of(f, "copy_tile(b, a)")],
        [line_of(f, "copy_tile(a, b, engine=")],
    ]
    assert opcodes(k) == ["dma_copy", "tensor_copy", "tensor_copy", "dma_copy"]


def test_compile_time_arguments_override_defaults():
    k, diags = run("meta_control.py", x=spec((128, 256)), mode="a")
    assert k is None
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_assert_failed", line_of("meta_control.py", "assert r == 2"))
    ]
