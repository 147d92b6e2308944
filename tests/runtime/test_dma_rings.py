"""The DMA engines as shared resources: reservations fill idle gaps, work is conserved."""

from __future__ import annotations

import random

import pytest
from nkirt.dma_rings import DmaRings


def rings() -> DmaRings:
    return DmaRings(horizon=lambda: 0.0)


def test_back_to_back_reservations_queue_up():
    r = rings()
    assert r.reserve(0, 0.0, 100.0) == 100.0
    assert r.reserve(0, 50.0, 100.0) == 200.0


def test_engines_are_independent():
    r = rings()
    r.reserve(0, 0.0, 100.0)
    assert r.reserve(1, 0.0, 100.0) == 100.0


def test_an_earlier_ready_chunk_uses_the_gap_before_a_reserved_one():
    r = rings()
    assert r.reserve(0, 100.0, 50.0) == 150.0
    assert r.reserve(0, 0.0, 80.0) == 80.0


def test_a_chunk_longer_than_the_gap_continues_after_the_reserved_one():
    r = rings()
    r.reserve(0, 100.0, 50.0)
    r.reserve(0, 0.0, 80.0)
    # 20 ns fit in [80, 100), the other 30 ns follow the reservation ending at 150
    assert r.reserve(0, 60.0, 50.0) == pytest.approx(180.0)
    assert r.busy_ns == pytest.approx(180.0)


def test_reserving_on_every_engine_at_once_equals_reserving_on_each():
    """Shared intervals (one list for identical engines) give the same times and busy total as
    per-engine reservations, including after the engines diverge."""
    rng = random.Random(5)
    for _ in range(50):
        shared, each = DmaRings(lambda: 0.0), DmaRings(lambda: 0.0)
        for _ in range(40):
            ready, duration = rng.uniform(0, 500), rng.uniform(1, 60)
            if rng.random() < 0.8:
                got = shared.reserve_all(ready, duration)
                want = max(each.reserve(k, ready, duration) for k in range(16))
            else:
                engine = rng.randrange(16)
                got = shared.reserve(engine, ready, duration)
                want = each.reserve(engine, ready, duration)
            assert got == want
        assert shared.busy_ns == pytest.approx(each.busy_ns)
