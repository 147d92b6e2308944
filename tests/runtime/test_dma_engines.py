"""Round-robin DMA arbitration (processor sharing between rings): the formulas of
docs/cost-model.md, DMA step 5, on the engines alone and through the executor."""

from __future__ import annotations

import random

import nkirt
import pytest
from neff_builder import Kernel
from nkirt.dma_engines import DmaEngines


def one_engine() -> DmaEngines:
    # no transfer is ever known to be final before it is fixed
    return DmaEngines(horizon=lambda: 0.0, count=1)


def test_two_equal_transfers_on_two_rings_finish_together_at_twice_the_time():
    e = one_engine()
    a, b = e.submit(0.0, 100.0, ring=0), e.submit(0.0, 100.0, ring=1)
    assert e.completion(a) == e.completion(b) == pytest.approx(200.0)


def test_a_small_transfer_is_not_held_behind_a_large_one():
    e = one_engine()
    large, small = e.submit(0.0, 1000.0, ring=0), e.submit(0.0, 10.0, ring=1)
    # both move at half rate until the small one is done
    assert e.completion(small) == pytest.approx(20.0)
    assert e.completion(large) == pytest.approx(1010.0)


def test_one_ring_serves_its_transfers_in_order():
    e = one_engine()
    first, second = e.submit(0.0, 1000.0, ring=3), e.submit(0.0, 10.0, ring=3)
    assert e.completion(first) == pytest.approx(1000.0)
    assert e.completion(second) == pytest.approx(1010.0)


def test_a_later_arrival_moves_a_provisional_completion():
    e = one_engine()
    large = e.submit(0.0, 1000.0, ring=0)
    assert e.completion(large) == pytest.approx(1000.0)
    small = e.submit(500.0, 100.0, ring=1)
    # from 500 on each has half the engine: the small one needs 200 ns, the large one 100 more
    assert e.completion(small) == pytest.approx(700.0)
    assert e.completion(large) == pytest.approx(1100.0)


def test_a_fixed_completion_does_not_move_and_later_arrivals_share_what_it_leaves():
    e = one_engine()
    large = e.submit(0.0, 1000.0, ring=0)
    assert e.fix(large) == pytest.approx(1000.0)
    small = e.submit(500.0, 100.0, ring=1)
    assert e.completion(small) == pytest.approx(1100.0)
    assert e.fix(large) == pytest.approx(1000.0)


def test_three_rings_arriving_in_turn():
    e = one_engine()
    a = e.submit(0.0, 300.0, ring=0)
    b = e.submit(100.0, 300.0, ring=1)
    c = e.submit(200.0, 300.0, ring=2)
    # [0,100) a alone: a 200 left; [100,200) halves: a 150, b 250; from 200 thirds:
    # a done after 450 more (650), then b (100 left) and c (150 left) halve: b at 850, c 900
    assert [e.completion(t) for t in (a, b, c)] == pytest.approx([650.0, 850.0, 900.0])


def test_work_is_conserved_and_fixing_moves_no_other_transfer():
    rng = random.Random(7)
    for _ in range(40):
        e = one_engine()
        transfers = [
            e.submit(rng.uniform(0, 400), rng.uniform(1, 200), ring=rng.randrange(4))
            for _ in range(12)
        ]
        transfers.sort(key=lambda t: t.shares[0][1].ready)
        before = [e.completion(t) for t in transfers]
        order = list(range(len(transfers)))
        rng.shuffle(order)
        for n, i in enumerate(order):
            assert e.fix(transfers[i]) == pytest.approx(before[i])
            for j in order[n + 1 :]:
                assert e.completion(transfers[j]) == pytest.approx(before[j])
        # the engine never idles while work is ready, so the last completion is that of any
        # work-conserving order, e.g. one transfer after another in ready order
        end = 0.0
        for t in transfers:
            share = t.shares[0][1]
            end = max(end, share.ready) + share.work
        assert max(before) == pytest.approx(end)


def test_identical_engines_are_simulated_once_and_match_separate_engines():
    rng = random.Random(3)
    for _ in range(20):
        shared, each = DmaEngines(lambda: 0.0), DmaEngines(lambda: 0.0)
        pairs = []
        for n in range(16):
            ready, work, ring = n * 10.0 + rng.uniform(0, 5), rng.uniform(5, 80), n % 5
            pairs.append(
                (
                    shared.submit(ready, work, ring),
                    each.submit(ready, [(k, work) for k in range(16)], ring),
                )
            )
            if rng.random() < 0.3:
                s, x = pairs[rng.randrange(len(pairs))]
                assert shared.fix(s) == pytest.approx(each.fix(x))
        for s, x in pairs:
            assert shared.completion(s) == pytest.approx(each.completion(x))
        assert shared.busy_ns == pytest.approx(each.busy_ns)


# -- through the executor: two loads on two queues, then a store waiting for one of them


def loads(large_first: bool, waiter_between: bool = False) -> Kernel:
    k = Kernel("trn2", name="rr")
    big_src = k.input("a", "bfloat16", [128, 4096])
    small_src = k.input("b", "bfloat16", [128, 64])
    out = k.output("y", "bfloat16", [128, 4096])
    big = k.sbuf("big", "bfloat16", [128, 4096])
    small = k.sbuf("small", "bfloat16", [128, 64], byte=8192)
    order = []

    def load_big():
        order.append(k.dma(k.ap(big), k.ap(big_src), queue="dma0"))
        if waiter_between:
            k.dma(k.ap(out), k.ap(big), waits=[(order[-1], 0)], queue="dma2")

    def load_small():
        order.append(k.dma(k.ap(small), k.ap(small_src), queue="dma1"))

    for step in (load_big, load_small) if large_first else (load_small, load_big):
        step()
    if not waiter_between:
        k.dma(k.ap(out), k.ap(big), waits=[(order[0 if large_first else 1], 0)], queue="dma2")
    return k


def run(k: Kernel):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


def _alone(which: str) -> float:
    """Data time of one load alone (its completion less the fixed cost)."""
    k = Kernel("trn2", name="alone")
    n = 4096 if which == "big" else 64
    src = k.input("a", "bfloat16", [128, n])
    dst = k.sbuf("t", "bfloat16", [128, n])
    k.dma(k.ap(dst), k.ap(src), queue="dma0")
    record = run(k).records[0]
    return record[3] - record[1] - 1300.0


def test_concurrent_loads_share_the_engines_whatever_their_program_order():
    big, small = _alone("big"), _alone("small")
    for large_first in (True, False):
        records = run(loads(large_first)).records
        done = {r[7]: r[3] for r in records}  # queue -> completion
        dma0, dma1 = 4, 5  # queue indices of dma0, dma1 (nkirt.program.QUEUES)
        assert done[dma1] == pytest.approx(1300.0 + 2 * small)
        assert done[dma0] == pytest.approx(1300.0 + big + small)
        store = records[-1]
        assert store[1] >= done[dma0]


def test_a_transfer_waited_for_before_a_later_one_arrives_keeps_its_completion():
    big, small = _alone("big"), _alone("small")
    records = run(loads(True, waiter_between=True)).records
    big_load, store, small_load = records
    assert big_load[3] == pytest.approx(1300.0 + big)
    assert store[1] == pytest.approx(big_load[3])
    # the later load has only what the fixed one leaves
    assert small_load[3] == pytest.approx(1300.0 + big + small)


def test_random_fixes_match_a_packet_free_reference_for_equal_rings():
    """Transfers all ready at 0 on distinct rings: processor sharing finishes them in size
    order, the i-th smallest at sum(smaller) + (n - i) × its size, whatever order they are
    fixed in."""
    rng = random.Random(11)
    for _ in range(30):
        works = [rng.uniform(1, 100) for _ in range(rng.randrange(2, 9))]
        e = one_engine()
        transfers = [e.submit(0.0, w, ring=n) for n, w in enumerate(works)]
        order = sorted(range(len(works)), key=lambda i: works[i])
        want, below = {}, 0.0
        for rank, i in enumerate(order):
            want[i] = below + (len(works) - rank) * works[i]
            below += works[i]
        fixing = list(range(len(works)))
        rng.shuffle(fixing)
        for i in fixing:
            assert e.fix(transfers[i]) == pytest.approx(want[i])
        # a newcomer after all of them has the engine to itself
        late = e.submit(0.0, 10.0, ring=99)
        assert e.completion(late) == pytest.approx(sum(works) + 10.0)


def test_engines_that_diverge_keep_the_transfers_pending_on_all_of_them():
    """A transfer on some engines only gives every engine its own state; transfers submitted
    while the engines were identical then complete as on separately kept engines."""
    rng = random.Random(5)
    for _ in range(20):
        shared, each = DmaEngines(lambda: 0.0), DmaEngines(lambda: 0.0)
        pairs = []
        for n in range(12):
            ready, work, ring = n * 20.0, rng.uniform(5, 80), n % 3
            if n == 6:  # partitions 0..63: engines 0..7
                chunks = [(k, work) for k in range(8)]
                pairs.append((shared.submit(ready, chunks, ring), each.submit(ready, chunks, ring)))
            else:
                pairs.append(
                    (
                        shared.submit(ready, work, ring),
                        each.submit(ready, [(k, work) for k in range(16)], ring),
                    )
                )
            if n in (3, 9):
                s, x = pairs[n - 2]
                assert shared.fix(s) == pytest.approx(each.fix(x))
        assert shared.members == [tuple(range(8)), tuple(range(8, 16))]
        for s, x in pairs:
            assert shared.completion(s) == pytest.approx(each.completion(x))
            assert shared.fix(s) == pytest.approx(each.fix(x))


def test_classes_of_identical_engines_match_engines_kept_one_by_one_exactly():
    """Transfers on all engines, on engines 0..7 and on engine 0 alone split the 16 engines
    into three classes simulated once each; every completion is that of the same shares on
    separately kept engines, to the last bit, with fixes interleaved."""
    rng = random.Random(11)
    for _ in range(20):
        classes = DmaEngines(lambda: 0.0)
        alone = [DmaEngines(lambda: 0.0, count=1) for _ in range(16)]
        pairs = []
        for n in range(30):
            ready, work, ring = n * 15.0 + rng.uniform(0, 10), rng.uniform(5, 80), n % 4
            engines = rng.choice([range(16), range(16), range(8), range(1)])
            if len(engines) == 16 and rng.random() < 0.5:
                chunks = work  # the same work on every engine
            else:
                chunks = [(k, work * (1 + k % 2 * (len(engines) < 16))) for k in engines]
            one_by_one = [
                (k, alone[k].submit(ready, w, ring))
                for k, w in (((k, chunks) for k in range(16)) if type(chunks) is float else chunks)
            ]
            pairs.append((classes.submit(ready, chunks, ring), one_by_one))
            if rng.random() < 0.3:
                t, parts = pairs[rng.randrange(len(pairs))]
                assert classes.fix(t) == max(alone[k].fix(p) for k, p in parts)
        assert len(classes.engines) <= 4
        for t, parts in pairs:
            assert classes.completion(t) == max(alone[k].completion(p) for k, p in parts)
            assert classes.fix(t) == max(alone[k].fix(p) for k, p in parts)
        assert classes.busy_ns == pytest.approx(sum(e.busy_ns for e in alone))


def test_a_remainder_below_the_clock_resolution_still_completes():
    # late in a long run (t = 1 s in ns) a share can be left with more than the completion
    # tolerance but less than the clock can step: it completes at the next representable
    # time instead of the simulation stepping forever (a library MoE kernel ran out of memory)
    t = 1e9
    e = one_engine()
    a, b = e.submit(t, 1.0 + 1e-8, ring=0), e.submit(t, 1.0, ring=1)
    assert e.completion(b) == pytest.approx(t + 2.0)
    assert t + 2.0 <= e.completion(a) <= t + 2.0 + 1e-6
