"""Kernel arguments from outside: TensorSpec, the CLI spec syntax, annotations, find_kernels."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nkic.frontend import TensorSpec, find_kernels, parse_arg_spec

from .util import KERNELS, compile_ok


def test_tensor_spec_normalises_dtypes():
    assert TensorSpec((128, 512), "bfloat16").dtype == "bfloat16"
    assert TensorSpec([2, 3], np.float32).shape == (2, 3)
    assert TensorSpec((2,), np.float32).dtype == "float32"
    assert TensorSpec((2,), np.dtype("int8")).dtype == "int8"
    assert TensorSpec((2,), ml_dtypes.bfloat16).dtype == "bfloat16"
    assert TensorSpec((2,), ml_dtypes.float8_e4m3fn).dtype == "float8_e4m3fn"
    assert TensorSpec((2,), "bool_").dtype == "bool"
    with pytest.raises(ValueError, match="unknown dtype"):
        TensorSpec((2,), np.float64)
    with pytest.raises(ValueError, match="positive"):
        TensorSpec((0, 2), "float32")


def test_parse_arg_spec():
    assert parse_arg_spec("bfloat16[128,512]") == TensorSpec((128, 512), "bfloat16")
    assert parse_arg_spec(" float32[ 4 ] ") == TensorSpec((4,), "float32")
    assert parse_arg_spec("7") == 7
    assert parse_arg_spec("(3,4)") == (3, 4)
    assert parse_arg_spec("True") is True
    assert parse_arg_spec("'causal'") == "causal"
    assert parse_arg_spec("2.5") == 2.5
    assert parse_arg_spec("None") is None


@pytest.mark.parametrize("text", ["floot32[128]", "float32[a,b]", "[1, 2", "float32[0]"])
def test_parse_arg_spec_rejects_garbage_with_one_line(text):
    with pytest.raises(ValueError) as e:
        parse_arg_spec(text)
    assert "\n" not in str(e.value)


def test_unknown_dtype_suggests_a_name():
    with pytest.raises(ValueError, match="did you mean 'float32'"):
        parse_arg_spec("floot32[128]")


def test_find_kernels(tmp_path):
    found = find_kernels(str(KERNELS / "loops.py"))
    assert [n for n, _ in found] == ["symbolic", "must_unroll", "nested", "escaped"]
    loc = found[0][1]
    assert (loc.line, loc.col, loc.end_col) == (9, 5, 13)
    f = tmp_path / "k.py"
    f.write_text(
        "from nki import jit as j\nimport nki as n\n\n@j\ndef a(x): pass\n\n"
        "@n.jit(mode='x')\ndef b(x): pass\n\ndef c(x): pass\n"
    )
    assert [n for n, _ in find_kernels(str(f))] == ["a", "b"]
    f.write_text("def broken(:\n")
    assert find_kernels(str(f)) == []


def test_annotations_give_shapes(tmp_path):
    f = tmp_path / "ann.py"
    f.write_text(
        "import nki\nimport nki.typing as nt\nimport nki.language as nl\n"
        "from nki.typing import tensor\n\n"
        "@nki.jit\ndef k(a: nt.tensor[128, 512], b: tensor[(4, 8), nl.bfloat16], n: int = 2):\n"
        "    assert a.shape == (128, 512) and a.dtype == nl.float32\n"
        "    assert b.shape == (4, 8) and b.dtype == nl.bfloat16 and n == 2\n"
    )
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    sink = DiagnosticSink()
    k = specialise(str(f), None, {}, "trn2", sink)
    assert not sink.items and [p.shape for p in k.params] == [(128, 512), (4, 8)]


def test_numpy_arrays_and_scalars_as_arguments():
    k = compile_ok("meta_control.py", x=np.zeros((128, 256), np.float32), mode=np.str_("b"))
    assert k.params[0].shape == (128, 256)
