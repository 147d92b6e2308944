"""The Python API with kernel functions imported from modules (through the stand-in `nki`)."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nkic

sys.path.insert(0, str(Path(__file__).parent / "kernels"))

import nki.language as nl  # noqa: E402  (the stand-in, installed by `import nkic`)
from square_op import square_op  # noqa: E402


def test_nki_names_from_python_are_compile_time_arguments():
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = nkic.compile(square_op, a, nl.multiply, nl.bfloat16)(a)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), a * a)


def test_calling_a_kernel_directly_says_how_to_compile_it():
    with pytest.raises(RuntimeError, match="nkic.compile"):
        square_op(np.zeros((2, 2)), nl.add, nl.float32)


def test_compile_errors_carry_every_diagnostic():
    a = np.zeros((2, 4), np.float32)
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(square_op, a, "not_an_op", nl.float32)
    assert e.value.diagnostics and all(d.code for d in e.value.diagnostics)
