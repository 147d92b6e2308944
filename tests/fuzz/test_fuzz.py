"""Hostile input never crashes nkic: saved crashes stay fixed, and short fuzzing runs find no
internal error, hang or unguarded allocation (the long run is `make fuzz`)."""

from __future__ import annotations

import random
from pathlib import Path

import harness
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import elementwise_kernels, programs

import nkic
from nkic.frontend import TensorSpec

CRASHES = sorted(p for p in harness.CRASHES.iterdir() if p.suffix in (".neff", ".py"))
FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@pytest.mark.parametrize("case", CRASHES, ids=[p.name for p in CRASHES])
def test_a_saved_crash_is_refused_cleanly(case: Path):
    if case.suffix == ".neff":
        outcome, detail = harness.run_neff(case.read_bytes())
    else:
        outcome, detail = harness.run_kernel(case)
    assert outcome in (harness.OK, harness.REFUSED), detail


@FAST
@given(programs())
def test_generated_programs_load_and_run_or_are_refused(program):
    outcome, detail = harness.run_neff(harness.container(program))
    assert outcome in (harness.OK, harness.REFUSED), detail


@pytest.fixture(scope="module")
def seeds():
    return [harness.unpack(blob) for blob in harness.neff_seeds()]


def test_mutated_example_neffs_are_refused_cleanly(seeds):
    rng = random.Random(17)
    outcomes = set()
    for _ in range(150):
        program, data = rng.choice(seeds)
        outcome, detail = harness.run_neff(
            harness.container(harness.mutate_program(program, rng), data)
        )
        assert outcome in (harness.OK, harness.REFUSED), detail
        outcomes.add(outcome)
    assert outcomes == {harness.OK, harness.REFUSED}


def test_mutated_kernels_get_diagnostics_not_internal_errors(tmp_path):
    rng = random.Random(3)
    kernels = harness.kernel_seeds()
    for _ in range(20):
        source = rng.choice(kernels)
        case = tmp_path / source.name
        case.write_text(harness.mutate_source(source.read_text(), rng))
        outcome, detail = harness.run_kernel(case)
        assert outcome in (harness.OK, harness.REFUSED), f"{source.name}: {detail}"


OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum}


@FAST
@given(elementwise_kernels())
def test_generated_kernels_match_numpy(tmp_path_factory, kernel):
    source, shape, chain = kernel
    path = tmp_path_factory.mktemp("k") / "chain.py"
    path.write_text(source)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    got = nkic.compile(str(path), a=TensorSpec(shape, "float32"), b=TensorSpec(shape, "float32"))(
        a, b
    )
    want = a
    for op in chain:
        want = OPS[op](want, b)
    np.testing.assert_array_equal(got, want)
