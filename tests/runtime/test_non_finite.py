"""Runs that turn finite inputs into Inf/NaN say where, and numpy warnings never escape."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import nkic
from nkic.cli import cli

KERNELS = Path(__file__).parent / "kernels" / "exp_rows.py"


def overflowing_input() -> np.ndarray:
    x = np.zeros((128, 384), np.float32)
    x[7, 300] = 100.0  # exp(100) overflows fp32, in the third tile only
    return x


def test_the_first_instruction_that_overflows_is_named_with_line_and_iteration():
    k = nkic.compile(str(KERNELS), overflowing_input(), kernel="exps")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = k(overflowing_input())
    assert np.isinf(out[7, 300]) and np.isfinite(np.delete(out.ravel(), 7 * 384 + 300)).all()
    (first,) = [w for w in k.profile["warnings"] if w.get("kind") == "non-finite"]
    assert first["op"] == "activation"
    assert first["loc"] == "exp_rows.py:15"  # paths relative to the kernel's directory
    assert re.search(r"\[i0?=2\] wrote Inf/NaN to 'dst'", first["message"])  # third tile
    assert first["outputs"] == ["dst"]
    categories = {w.category for w in caught}
    assert categories == {nkic.NonFiniteWarning}  # numpy's overflow warning does not leak


def test_finite_runs_and_intended_infinities_are_not_reported():
    x = np.linspace(-3, 3, 128 * 384, dtype=np.float32).reshape(128, 384)
    k = nkic.compile(str(KERNELS), x, kernel="exps")
    k(x)
    assert k.profile["warnings"] == []
    # memset to -inf is a non-finite *input* (an immediate): the max that reads it is not reported
    k = nkic.compile(str(KERNELS), x[:, :128], kernel="floor_at_minus_inf")
    np.testing.assert_array_equal(k(x[:, :128]), x[:, :128])
    assert k.profile["warnings"] == []


def test_no_numpy_warning_leaks_from_the_runtime():
    k = nkic.compile(str(KERNELS), overflowing_input(), kernel="exps")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", nkic.SimulationWarning)
        k(overflowing_input())  # an 'overflow encountered in exp' would raise here


def test_cli_reports_it_and_strict_makes_it_an_error(tmp_path):
    runner = CliRunner()
    neff = tmp_path / "k.neff"
    res = runner.invoke(
        cli, ["compile", str(KERNELS), "-k", "exps", "--arg", "x=float32[128,384]", "-o", str(neff)]
    )
    assert res.exit_code == 0, res.output
    np.save(tmp_path / "x.npy", overflowing_input())
    args = ["run", str(neff), "--in", f"x={tmp_path / 'x.npy'}", "--out-dir", str(tmp_path)]
    plain = runner.invoke(cli, [*args, "--profile", str(tmp_path / "p.json")])
    assert plain.exit_code == 0
    assert "warning: non-finite values from finite inputs: activation at exp_rows.py:15" in (
        plain.output
    )
    assert json.loads((tmp_path / "p.json").read_text())["warnings"][0]["kind"] == "non-finite"
    strict = runner.invoke(cli, [*args, "--strict"])
    assert strict.exit_code == 1
    np.save(tmp_path / "x.npy", np.zeros((128, 384), np.float32))
    assert runner.invoke(cli, [*args, "--strict"]).exit_code == 0


@pytest.mark.parametrize("target", ["trn2"])
def test_strict_is_off_in_timing_only_runs(tmp_path, target):
    """Timing-only runs compute no values, so they cannot report (nor fail on) Inf/NaN."""
    k = nkic.compile(str(KERNELS), overflowing_input(), kernel="exps", target=target)
    assert k(overflowing_input(), timing_only=True) is None
    assert k.profile["warnings"] == []
