"""Fixtures for calling instruction semantics directly: an execution context per target."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest


def make_ctx(target: str = "trn2", seed: int = 0) -> SimpleNamespace:
    """What the executor passes as `ctx`: the target, a seeded Generator, run-wide state."""
    return SimpleNamespace(target=target, rng=np.random.default_rng(seed), state={})


@pytest.fixture
def ctx() -> SimpleNamespace:
    return make_ctx()


@pytest.fixture
def ctx3() -> SimpleNamespace:
    return make_ctx("trn3")
