"""busy_union: the time covered by at least one interval, to the last bit on large inputs."""

from __future__ import annotations

import numpy as np
import pytest
from nkirt.profile import busy_union


def reference(intervals):
    """Interval by interval in order of start: the part past the furthest end so far."""
    busy, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


@pytest.mark.parametrize("seed", range(4))
def test_large_inputs_sum_exactly_as_interval_by_interval(seed):
    rng = np.random.default_rng(seed)
    starts = rng.uniform(0, 1e6, 5000)
    # overlapping, nested, touching and repeated intervals, some of zero length
    ends = starts + rng.choice([0.0, 0.1, 7.3, 1e3, 5e4], 5000) * rng.random(5000)
    intervals = list(zip(starts.tolist(), ends.tolist()))
    intervals += intervals[:100] + [(e, e + 1.0) for e in ends[:50].tolist()]
    assert busy_union(intervals) == reference(intervals)


def test_disjoint_overlapping_and_nested_intervals():
    many = [(10.0 * k, 10.0 * k + 4.0) for k in range(100)]  # 100 disjoint: 400 ns
    assert busy_union(many) == 400.0
    assert busy_union([*many, (0.0, 1000.0)]) == 1000.0
    assert busy_union([*many, (2.0, 13.0)]) == 400.0 + 6.0
    assert busy_union([(0.0, 5.0), (1.0, 2.0)]) == 5.0
    assert busy_union([]) == 0.0
