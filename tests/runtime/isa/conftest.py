"""Fixtures for calling instruction semantics directly: an execution context per target."""

from __future__ import annotations

import numpy as np
import pytest
from nkirt.executor import ExecContext


def make_ctx(target: str = "trn2", seed: int = 0, exact: bool = True) -> ExecContext:
    """What the executor passes as `ctx`: the target, a seeded Generator, run-wide state and
    the warnings of the instruction being executed (`ctx.pending`). Matmuls sum in contraction
    order unless `exact` is False (the default of a run: one BLAS product)."""
    return ExecContext(target, np.random.default_rng(seed), exact_accumulation=exact)


@pytest.fixture
def ctx() -> ExecContext:
    return make_ctx()


@pytest.fixture
def ctx3() -> ExecContext:
    return make_ctx("trn3")
