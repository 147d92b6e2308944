"""`nkic migrate` on value-returning `nisa` calls nested inside other expressions: each runs
first into a fresh tile, innermost first, and the expression reads the tile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nkic import api
from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify

NESTED = Path(__file__).resolve().parent / "beta1_nested.py"
SHAPES = {"a": TensorSpec((128, 512), "float32"), "w": TensorSpec((128, 128), "float32")}


@pytest.fixture(scope="module")
def nested():
    return migrate_source(NESTED.read_text())


def test_nested_calls_run_first_into_fresh_tiles_innermost_first(nested):
    text = nested.text
    assert (
        "    # halve, add one, then exponentiate\n"
        "    tensor_scalar_result0 = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)\n"
        "    nisa.tensor_scalar(dst=tensor_scalar_result0, data=t, op0=nl.multiply, operand0=0.5)\n"
    ) in text
    assert (
        "    nisa.tensor_scalar(dst=tensor_scalar_result1, data=tensor_scalar_result0, "
        "op0=nl.add, operand0=1.0)\n"
        "    e = nl.exp(tensor_scalar_result1)\n"
    ) in text
    assert "    nl.store(out, value=tensor_scalar_result2)\n" in text
    assert (
        "    nisa.nc_matmul(dst=nc_matmul_result0, stationary=wt, moving=t)\n"
        "    nl.store(prod, value=nl.copy(nc_matmul_result0, dtype=nl.float32))\n"
    ) in text


def test_a_call_that_may_not_run_stays_a_manual_step(nested):
    assert [(t.line, t.message.split(":")[0]) for t in nested.todos] == [
        (28, "nisa.tensor_scalar returns its result here, which current NKI does not"),
    ]
    assert (
        "    e = nl.exp(nisa.tensor_scalar(t, nl.multiply, 2.0) if twice else t)\n" in nested.text
    )


def test_the_nested_migration_computes_the_same_bits_as_numpy(nested, tmp_path):
    outcome = verify(str(NESTED), nested.text, "nested_chain", SHAPES, "trn2")
    assert outcome.error is None
    assert outcome.identical, outcome.describe()
    path = tmp_path / "nested_07.py"
    path.write_text(nested.text)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    out, prod = api.compile(str(path), a, w, kernel="nested_chain")(a, w)
    np.testing.assert_allclose(out, 2.0 * np.exp(a * 0.5 + 1.0), rtol=2e-6)
    np.testing.assert_allclose(prod, w.T @ a, rtol=1e-4, atol=1e-4)
