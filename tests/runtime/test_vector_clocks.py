"""Vector clocks packed into one int (nkirt.hazards): merging and reading them agree with the
same operations on per-lane lists."""

import random

from nkirt.hazards import (
    ALL_ORDERED,
    FIELD,
    clock_entry,
    clock_max,
    guard_bits,
    lane_field,
    make_clock,
)


def test_clock_max_is_the_elementwise_max_of_the_lanes():
    rng = random.Random(0)
    for lanes in (1, 2, 5, 20):
        guards = guard_bits(lanes)
        for _ in range(500):
            # counts of all sizes, equal ones and the largest a lane holds included
            pool = [0, 1, 2, 7, FIELD - 1, FIELD]
            a = [rng.choice(pool + [rng.randrange(FIELD)]) for _ in range(lanes)]
            b = [rng.choice(pool + [rng.randrange(FIELD)]) for _ in range(lanes)]
            if rng.random() < 0.3:  # one covering the other (the shortcut)
                b = [min(x, y) for x, y in zip(a, b)]
            merged = clock_max(make_clock(a), make_clock(b), guards)
            assert [clock_entry(merged, r) for r in range(lanes)] == [
                max(x, y) for x, y in zip(a, b)
            ]
            assert clock_max(make_clock(b), make_clock(a), guards) == merged


def test_an_access_is_ordered_exactly_when_the_clock_has_counted_it():
    # an access by instance `seq` of lane r is unordered for clock c iff seq >= c[r]:
    # `c & field <= mark` with field = lane_field(r), mark = seq << (32 r)
    counts = [3, 0, 9]
    clock = make_clock(counts)
    for lane, count in enumerate(counts):
        field = lane_field(lane)
        for seq in range(12):
            mark = seq << (32 * lane)
            assert (clock & field <= mark) == (seq >= count)
            assert not ALL_ORDERED & field <= mark  # every instance ordered before it
