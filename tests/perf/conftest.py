"""Helpers of the performance tests: compile with the real compiler, simulate timing only."""

from __future__ import annotations

from pathlib import Path

import nkirt
import pytest

from nkic import driver
from nkic.diagnostics import render_text
from nkic.frontend import TensorSpec

KERNELS = Path(__file__).resolve().parent / "kernels"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def compile_neff(path: Path, kernel: str, args: dict, target: str) -> bytes:
    result = driver.compile_file(str(path), kernel, args, target)
    if not result.ok:
        pytest.fail(f"{kernel} did not compile:\n{render_text(result.diagnostics)}")
    return result.neff


def simulate(path: Path, kernel: str, args: dict, target: str = "trn1"):
    """The RunResult of a timing-only run of `kernel` compiled for `target`."""
    return nkirt.execute(nkirt.load(compile_neff(path, kernel, args, target)), {}, timing_only=True)


def latency(path: Path, kernel: str, args: dict, target: str = "trn1") -> float:
    return simulate(path, kernel, args, target).profile["total_ns"]


def spec(shape, dtype="bfloat16") -> TensorSpec:
    return TensorSpec(tuple(shape), dtype)
