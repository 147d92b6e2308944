"""A DMA rotating over queues (neff `queues`/`stride`) runs instance n on
dma((first + n·stride) mod queues); a waiter waits for every earlier instance too."""

from __future__ import annotations

import nkirt
from neff_builder import Kernel
from nkirt.program import QUEUES


def loads(queues: int | None, stride: int = 1, trips: int = 8) -> Kernel:
    """`trips` loads of [128, 64] bf16 rows into columns of one tile, then a store."""
    k = Kernel("trn2", name="rot")
    src = k.input("x", "bfloat16", [trips * 128, 64])
    out = k.output("y", "bfloat16", [128, 64])
    tile = k.sbuf("t", "bfloat16", [128, 64 * trips])
    with k.loop("i0", 0, trips) as i:
        load = k.dma(
            k.ap(tile, offset={"c": 0, "t": {i: 64}}, pattern=[[64 * trips, 128], [1, 64]]),
            k.ap(src, offset={"c": 0, "t": {i: 128 * 64}}, pattern=[[64, 128], [1, 64]]),
        )
    if queues:
        k.body[0]["body"][0].update({"queues": queues, "stride": stride})
    k.dma(
        k.ap(out),
        k.ap(tile, offset=64 * (trips - 1), pattern=[[64 * trips, 128], [1, 64]]),
        waits=[(load, 0)],
        queue="dma1",
    )
    return k


def run(k: Kernel):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


def test_instances_run_on_their_rotated_queues():
    result = run(loads(16, stride=3))
    queues = [QUEUES[r[7]] for r in result.records[:8]]
    assert queues == [f"dma{3 * n % 16}" for n in range(8)]


def test_rotation_overlaps_the_fixed_costs_of_one_instruction():
    one, rotated = run(loads(None)), run(loads(16))
    # one queue issues a transfer per 1.3 us fixed cost; 8 queues issue theirs together
    assert [r[1] for r in one.records[:8]] == [1300.0 * n for n in range(8)]
    assert [r[1] for r in rotated.records[:8]] == [0.0] * 8
    assert rotated.profile["total_ns"] < one.profile["total_ns"]


def test_a_waiter_on_the_newest_instance_waits_for_every_earlier_one():
    result = run(loads(16))
    store = result.records[-1]
    assert store[1] >= max(r[3] for r in result.records[:-1])
