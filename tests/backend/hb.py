"""Happens-before over a compiled program, instance by instance (small loops only): which
conflicting accesses on different queues does no chain of semaphore waits order?

Two stages, so that many variants of one schedule's waits are cheap to judge: `conflicts`
tracks every byte once and lists, for each access, the latest write before it and (for a write)
the latest read of each queue since then; `unordered` propagates vector clocks over queues
through the waits (an instance starts after its queue's previous instance started and after
every instance it waits for completed; a queue completes its instances in order) and returns
the pairs left unordered. Transitivity makes those pairs enough: an older conflicting access
is ordered before the one listed (or is on its queue)."""

from __future__ import annotations

from dataclasses import dataclass

from nkic.backend.schedule import Schedule
from nkic.ir.core import Inst, Kernel, Loop

from .oracle import touched


@dataclass
class Instance:
    sid: int  # the instruction's id in the schedule
    queue: str
    index: int  # position on its queue
    env: dict[str, int]
    issued_before: int  # instances of the same instruction issued before this one


def instances(kernel: Kernel, sched: Schedule) -> list[Instance]:
    """Every instance in issue order."""
    out: list[Instance] = []
    count = {s.queue_of(n): 0 for s in sched.insts for n in range(s.queues)}
    issued = {s.id: 0 for s in sched.insts}

    def run(ops, env):
        for op in ops:
            if isinstance(op, Loop):
                for v in range(op.start, op.stop, op.step):
                    run(op.body, {**env, op.var: v})
            elif isinstance(op, Inst):
                s = sched.by_inst[op]
                queue = s.queue_of(issued[s.id])
                out.append(Instance(s.id, queue, count[queue], env, issued[s.id]))
                count[queue] += 1
                issued[s.id] += 1

    run(kernel.body, {})
    return out


def conflicts(kernel: Kernel, sched: Schedule, insts: list[Instance]) -> set[tuple[int, int]]:
    """(earlier, later) instance numbers on different queues that touch a common byte, one
    writing it, with no write to it in between (and, for two reads' writer, the latest)."""
    slots: dict[str, int] = {}
    writer: dict = {}
    readers: dict = {}  # byte -> {queue: latest instance reading it since the last write}
    pairs: set[tuple[int, int]] = set()
    n = 0

    def run(ops, env):
        nonlocal n
        for op in ops:
            if isinstance(op, Loop):
                for v in range(op.start, op.stop, op.step):
                    run(op.body, {**env, op.var: v})
                    slots[op.var] = slots.get(op.var, 0) + 1
            elif isinstance(op, Inst):
                touch(sched.by_inst[op], env, n)
                n += 1

    def touch(s, env, me):
        touched_r, touched_w = touched(s.inst, env, slots)
        for byte in touched_r | touched_w:
            w = writer.get(byte)
            if w is not None and insts[w].queue != insts[me].queue:
                pairs.add((w, me))
            if byte in touched_w:
                for q, r in readers.get(byte, {}).items():
                    if q != insts[me].queue:
                        pairs.add((r, me))
        for byte in touched_w:
            writer[byte] = me
            readers[byte] = {}
        for byte in touched_r - touched_w:
            readers.setdefault(byte, {})[insts[me].queue] = me

    run(kernel.body, {})
    return pairs


def unordered(
    sched: Schedule, insts: list[Instance], pairs: set[tuple[int, int]], waits=None
) -> list[tuple[int, int]]:
    """The pairs no chain of waits orders; `waits` (instruction id -> waits) replaces the
    schedule's own."""
    by_sid: dict[int, list[int]] = {}
    start: dict[str, dict[str, int]] = {}
    last_done: dict[str, dict[str, int]] = {}
    done: list[dict[str, int]] = []
    # per instance: what waiting for it teaches (it and every earlier instance of its
    # instruction completed: a rotating DMA's instances complete in order for a waiter)
    prefix: list[dict[str, int]] = []
    clock_at_start: list[dict[str, int]] = []
    for n, x in enumerate(insts):
        vc = dict(start.get(x.queue, {}))
        own = sched.insts[x.sid].waits if waits is None else waits[x.sid]
        for pid, skip in own:
            if not isinstance(skip, int):
                skip = skip.evaluate(x.env)
            hist = by_sid.get(pid, [])
            if len(hist) > skip:
                for q, i in prefix[hist[-1 - skip]].items():
                    if i > vc.get(q, -1):
                        vc[q] = i
        start[x.queue] = vc
        d = dict(vc)
        for q, i in last_done.get(x.queue, {}).items():
            if i > d.get(q, -1):
                d[q] = i
        d[x.queue] = x.index
        last_done[x.queue] = d
        done.append(d)
        before = by_sid.get(x.sid)
        if before:
            d = dict(d)
            for q, i in prefix[before[-1]].items():
                if i > d.get(q, -1):
                    d[q] = i
        prefix.append(d)
        clock_at_start.append(vc)
        by_sid.setdefault(x.sid, []).append(n)
    return sorted(
        (a, b) for a, b in pairs if clock_at_start[b].get(insts[a].queue, -1) < insts[a].index
    )


def unneeded_waits(kernel: Kernel, sched: Schedule) -> list[tuple[int, tuple]]:
    """The waits (consumer id, wait) whose removal leaves every conflict ordered."""
    insts = instances(kernel, sched)
    pairs = conflicts(kernel, sched, insts)
    assert unordered(sched, insts, pairs) == [], "the schedule itself leaves a conflict unordered"
    out = []
    for s in sched.insts:
        for w in s.waits:
            waits = {x.id: x.waits for x in sched.insts}
            waits[s.id] = [v for v in s.waits if v != w]
            if not unordered(sched, insts, pairs, waits):
                out.append((s.id, w))
    return out
