"""Fixtures for calling instruction semantics directly: an execution context per target."""

from __future__ import annotations

import numpy as np
import pytest
from nkirt.executor import ExecContext


def make_ctx(target: str = "trn2", seed: int = 0) -> ExecContext:
    """What the executor passes as `ctx`: the target, a seeded Generator, run-wide state and
    the warnings of the instruction being executed (`ctx.pending`)."""
    return ExecContext(target, np.random.default_rng(seed))


@pytest.fixture
def ctx() -> ExecContext:
    return make_ctx()


@pytest.fixture
def ctx3() -> ExecContext:
    return make_ctx("trn3")
