"""Negative tests through the public API: each language diagnostic of the requirement, from a
small kernel, with its code, line and column (tests/frontend/test_diagnostics.py checks every
code on the IR side; these add what it lacks and the user-visible rendering)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from tests.deprecations import without_loop_deprecations

FRONTEND_ERRORS = Path(__file__).resolve().parents[2] / "frontend" / "kernels" / "errors"
X = np.zeros((128, 64), np.float32)

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

# (name, body of `def k(x):` or a whole file, extra args, [(code, line, col, text in message)])
# lines count from the `@nki.jit` line = 6.
CASES = [
    ("lambda_emits_ir", "f = lambda: nl.ndarray((1, 1), nl.float32)\n    f()", {},
     [("err_unsupported_syntax", 8, 17, "lambda")]),
    ("try_except", "try:\n        pass\n    except Exception:\n        pass", {"nki": "0.6"},  # 0.7: Python's
     [("err_unsupported_syntax", 8, 5, "try")]),
    ("global", "global g", {"nki": "0.6"}, [("err_unsupported_syntax", 8, 5, "global")]),
    ("nonlocal", "n = 1\n\n    def inner():\n        nonlocal n\n\n    inner()", {"nki": "0.6"},
     [("err_unsupported_syntax", 11, 9, "nonlocal")]),
    ("yield", "yield x", {}, [("err_unsupported_syntax", 8, 5, "yield")]),
    ("await", "async def co():\n        pass", {}, [("err_unsupported_syntax", 8, 5, "async")]),
    ("with_other", "with range(3):\n        pass", {}, [("err_unsupported_syntax", 8, 10, "")]),
    ("is_not_none", "if x is not x:\n        pass", {"nki": "0.3"},  # `is` is Python's in 0.7
     [("err_unsupported_syntax", 8, 8, "is")]),
    ("breakpoint", "breakpoint()", {}, [("err_unsupported_syntax", 8, 5, "breakpoint")]),
    ("undefined", "y = undefined_thing + 1", {}, [("err_undefined_name", 8, 9, "undefined_thing")]),
    ("unknown_api", "t = nl.zeroes((1, 1), nl.float32)", {}, [("err_unknown_api", 8, 9, "zeroes")]),
    ("unexpected_keyword", "nisa.memset(dst=x, value=0.0, engin=nisa.engine.vector)", {},
     [("err_unexpected_keyword", 8, 35, "engin")]),
    ("int32_overflow", "n = 2**31 - 1", {}, [("err_value_error", 8, 9, "32-bit")]),
    ("int32_in_loop", "for i in nl.affine_range(4):\n        v = i * 1073741824 + 5", {},
     [("err_value_error", 9, 13, "2 * 1073741824 = 2147483648")]),
    ("int32_builtin", "n = int(3e9)", {}, [("err_value_error", 8, 9, "int(...) = 3000000000")]),
    ("int32_math", "import math\n    n = math.factorial(13)", {},
     [("err_value_error", 9, 9, "32-bit")]),
    ("assert_message", "P, F = x.shape\n    assert F == 32, f'need 32 columns, got {F}'", {},
     [("err_assert_failed", 9, 5, "need 32 columns, got 64")]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_language_diagnostic(tmp_path, name, body, args, want):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + f"@nki.jit\ndef k(x):\n    {body}\n")
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), x=X, **args)
    diags = without_loop_deprecations(e.value.diagnostics)
    got = [(d.code, d.loc.line, d.loc.col) for d in diags]
    assert got == [w[:3] for w in want], (path.read_text(), str(e.value))
    for d, w in zip(diags, want):
        assert w[3] in d.message + (d.hint or "")
        assert d.hint


def test_keyword_only_parameter_and_list_argument(tmp_path):
    path = tmp_path / "sig.py"
    path.write_text(HEADER + "@nki.jit\ndef k(x, *, flag=True):\n    pass\n")
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), x=X)
    assert [(d.code, d.loc.line) for d in e.value.diagnostics] == [("err_unsupported_syntax", 7)]
    path.write_text(HEADER + "@nki.jit\ndef k(x, sizes=(1, 2)):\n    pass\n")
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), x=X, sizes=[1, 2], nki="0.6")
    (d,) = e.value.diagnostics
    assert (d.code, d.loc.line, d.loc.col) == ("err_unsupported_syntax", 7, 10)
    assert "tuple" in d.message + d.hint


def test_recursion_depth_limit(tmp_path):
    path = tmp_path / "rec.py"
    path.write_text(
        HEADER + "def down(n):\n    return down(n + 1)\n\n\n@nki.jit\ndef k(x):\n    down(0)\n"
    )
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), x=X)
    (d,) = e.value.diagnostics
    assert (d.code, d.loc.line, d.loc.col) == ("err_specialisation_limit", 7, 12)
    assert d.loc.stack[0].line == 12 and len(d.loc.stack) > 100


def test_helper_errors_render_the_call_chain():
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(FRONTEND_ERRORS / "chain.py"), x=np.zeros((128, 512), np.float32))
    (d,) = e.value.diagnostics
    assert d.code == "err_invalid_argument" and (d.loc.line, d.loc.col) == (5, 35)
    text = str(e.value)
    assert f"note: called from {FRONTEND_ERRORS / 'chain_helpers.py'}:9:5" in text
    assert f"note: called from {FRONTEND_ERRORS / 'chain.py'}:10:5" in text


def test_missing_kernel_file():
    missing = str(FRONTEND_ERRORS / "no_such_kernel.py")
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(missing, kernel="k", x=X)
    (d,) = e.value.diagnostics
    assert (d.code, d.loc.file, d.loc.line) == ("err_file_not_found", missing, 1)


def test_print_of_a_tensor_shows_its_metadata(tmp_path, capsys):
    path = tmp_path / "p.py"
    path.write_text(
        HEADER + "@nki.jit\ndef k(x):\n    print('x is', x[:, 0:8])\n"
        "    t = nl.ndarray((4, 2, 8), nl.bfloat16, buffer=nl.sbuf)\n    print(t[:, 1])\n"
        "    print(x.dtype, x.shape, t.buffer)\n"
    )
    nkic.check(path, x=nkic.TensorSpec((128, 64), "float32"))
    err = capsys.readouterr().err
    assert "x is NkiTensor(shape=(128, 8), dtype=float32, buffer=hbm" in err
    assert "NkiTensor(shape=(4, 8), dtype=bfloat16, buffer=sbuf" in err
    assert "float32 (128, 64) sbuf" in err
