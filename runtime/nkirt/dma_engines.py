"""The 16 DMA engines of a NeuronCore serving concurrent transfers round-robin.

A DMA engine takes descriptors from up to 16 DMA rings round-robin and switches rings only at
packet boundaries (docs/cost-model.md, DMA step 5), so transfers in flight at the same time
share an engine's bandwidth packet by packet: two equal transfers finish together at twice the
time of one, and a small transfer is not held behind a large one queued before it. The model
is the fluid limit of that arbitration, processor sharing: while n transfers have work left on
an engine, each moves at 1/n of the capacity that fixed transfers leave.

A transfer's completion is *provisional* while a transfer that becomes ready later may still
arrive and take a share; it is *fixed* when the executor asks for it (`fix`: an instruction
waits for it) or when no transfer can arrive before it (`settle`). A fixed transfer keeps the
rate it was given at every instant (its use of the engine becomes part of the committed
capacity profile), so fixing changes no other transfer's schedule, and later arrivals share
only what it leaves.

Engines that every transfer so far has given the same work at the same time are identical, and
are simulated once: the engines are kept as classes of identical engines (`members`). All 16
start in one class (the usual case: `[128, x]` transfers spread evenly over the 16 engines); a
transfer that gives the members of a class different work splits it, each part continuing from
a copy of the class's state (e.g. transfers of partitions 0..63 and of partition 0 alone leave
three classes: engine 0, engines 1..7, engines 8..15).
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable
from math import inf, nextafter

from nkirt.cost.tables import DMA_ENGINES

#: capacity below this counts as none, work below this (ns) as done (float round-off)
EPS = 1e-9
#: committed-profile breakpoints beyond which the passed ones are dropped
PRUNE_AT = 64
#: pending shares beyond which those no later transfer can reach are fixed (fixing them
#: changes no time: it only keeps the simulation of the pending set short)
SETTLE_AT = 8


class Transfer:
    """A transfer's shares of the engines (engine, share), and what the executor keeps of it
    until its completion is fixed (`nkirt.executor`)."""

    __slots__ = (
        "shares",
        "value",
        "floor",
        "after",
        "rotated",
        "waited",
        "record",
        "data",
        "provisional",
        "accesses",
        "hbm",
    )

    def __init__(self):
        self.shares: list[tuple[int, Share]] = []
        #: the fixed completion (None while provisional)
        self.value: float | None = None
        #: the executor's: the completion's lower bound besides the engines (the data start,
        #: the HBM-side reservations), the previous transfer of the queue (completions are in
        #: order within a queue), the previous instance of a rotating DMA (its waiters wait
        #: for both) and the value they wait for once fixed; the instance's record number,
        #: its `dma_data` entry, the completion its record was given at issue and its memory
        #: accesses (all corrected when the completion is fixed)
        self.floor = 0.0
        self.after: Transfer | float = 0.0
        self.rotated: Transfer | float = 0.0
        self.waited: float | None = None
        self.record = -1
        self.data = -1
        self.provisional = 0.0
        self.accesses: list = []
        #: its transfer of the HBM-side bytes on the core's HBM resource (None: none)
        self.hbm: Transfer | None = None


class Share:
    """One transfer's work on one engine: its ring, ready time, work (ns at the engine's full
    rate) and provisional or fixed completion."""

    __slots__ = ("ready", "work", "done", "fixed", "owner", "left", "ring", "first", "last")

    def __init__(self, ready: float, work: float, owner: Transfer, ring: int):
        self.ready = ready
        self.ring = ring
        self.work = work
        self.done = inf
        self.fixed = False
        #: the engine's simulation steps that served it (first < 0: it was alone)
        self.first = self.last = -1
        self.owner = owner
        self.left = work

    def __lt__(self, other: Share) -> bool:  # pending shares are kept in ready order
        return self.ready < other.ready


def _ready(share: Share) -> float:
    return share.ready


class Engine:
    """One engine: the capacity fixed transfers use (a step function: `used[i]` on
    [`times[i]`, `times[i + 1]`), 0 after the last breakpoint) and the transfers pending on it."""

    __slots__ = ("times", "used", "pending", "fresh", "prune_at", "steps")

    def __init__(self):
        self.times: list[float] = []
        self.used: list[float] = []
        self.pending: list[Share] = []
        #: the pending shares' `done` and `profile` are those of the current pending set
        self.fresh = True
        self.prune_at = PRUNE_AT
        self.steps: list[tuple[float, float, float]] = []

    def copy(self) -> Engine:
        twin = Engine()
        twin.times, twin.used, twin.prune_at = list(self.times), list(self.used), self.prune_at
        return twin

    def add(self, share: Share) -> None:
        pending = self.pending
        if not pending or pending[-1].ready <= share.ready:
            pending.append(share)  # (the usual case: where insort puts it, without searching)
        else:
            insort(pending, share)
        self.fresh = False

    def simulate(self) -> None:
        """Every pending share's provisional completion and rate profile: the rings with work
        share the capacity the fixed transfers leave equally (processor sharing), each ring
        serving its transfers in order, from the earliest ready time on."""
        self.fresh = True
        pending = self.pending
        if not pending:
            return
        times, used = self.times, self.used
        if len(pending) == 1:
            # alone (the usual case): all the capacity the fixed transfers leave, from its
            # ready time to its completion (`fix` marks that stretch fully used)
            s = pending[0]
            s.first = -1
            t, left = s.ready, s.work
            j = bisect_right(times, t) - 1
            last = len(times) - 1
            while j < last:
                cap = 1.0 - used[j] if j >= 0 else 1.0
                boundary = times[j + 1]
                if cap > EPS:
                    if left <= (boundary - t) * cap:
                        s.done = t + left / cap
                        return
                    left -= (boundary - t) * cap
                t = boundary
                j += 1
            s.done = t + left
            return
        for s in pending:
            s.left = s.work
        #: (from, to, rate) of every step; a share is served in the steps first..last, at
        #: the step's rate (every ring with work gets the same)
        self.steps = steps = []
        t = pending[0].ready
        j = bisect_right(times, t) - 1  # the committed segment holding t (-1: before all)
        last = len(times) - 1
        arrivals, n = 0, len(pending)
        #: the share each ring is serving, and the ones queued behind it (in order)
        active: list[Share] = []
        behind: dict[int, list[Share] | None] = {}
        least = inf
        while active or arrivals < n:
            if not active:
                ready = pending[arrivals].ready
                if ready > t:
                    t = ready
                while j < last and times[j + 1] <= t:
                    j += 1
            while arrivals < n and pending[arrivals].ready <= t:
                share = pending[arrivals]
                arrivals += 1
                ring = share.ring
                if ring not in behind:
                    behind[ring] = None  # (a list once a share queues behind)
                    share.first = len(steps)
                    active.append(share)
                    if share.left < least:
                        least = share.left
                else:
                    queued = behind[ring]
                    if queued is None:
                        behind[ring] = [share]
                    else:
                        queued.append(share)
            cap = 1.0 - used[j] if j >= 0 else 1.0
            boundary = times[j + 1] if j < last else inf
            arrival = pending[arrivals].ready if arrivals < n else inf
            if cap <= EPS:
                t = boundary if boundary < arrival else arrival
                if t >= boundary:
                    j += 1
                continue
            rate = cap / len(active)
            finish = t + least / rate
            if finish <= t and not any(
                s.left <= EPS * (s.work if s.work > 1.0 else 1.0) for s in active
            ):
                # what is left of the least share is below the resolution of t, and above
                # the tolerance that completes it: no step would ever make progress (the
                # steps list grew until memory ran out). End it at the next representable time.
                finish = nextafter(t, inf)
            end = finish  # min(finish, boundary, arrival)
            if boundary < end:
                end = boundary
            if arrival < end:
                end = arrival
            served = (end - t) * rate
            steps.append((t, end, rate))
            still = []
            least = inf
            for s in active:
                rest = s.left - served
                if end == finish and rest <= EPS * (s.work if s.work > 1.0 else 1.0):
                    s.done = end
                    s.last = len(steps)
                    queued = behind[s.ring]
                    if queued:
                        s = queued.pop(0)
                        s.first = len(steps)
                        rest = s.left
                    else:
                        del behind[s.ring]
                        continue
                else:
                    s.left = rest
                still.append(s)
                if rest < least:
                    least = rest
            active = still
            t = end
            if t >= boundary:
                j += 1

    def fix(self, share: Share) -> None:
        """Commit a pending share: its rates join the committed capacity profile."""
        if not self.fresh:
            self.simulate()
        self.pending.remove(share)
        share.fixed = True
        share.owner = None
        times, used = self.times, self.used
        if share.first < 0:  # computed alone: its stretch is now fully used
            ready, done = share.ready, share.done
            n = len(times)
            tail = used[-1] if n else 0.0
            if done > ready and tail < 1.0 - EPS and (not n or ready >= times[-1]):
                # at the end of the profile (the usual case): what the general steps below
                # do there, without the searches and insertions
                if n and times[-1] == ready:
                    used[-1] = 1.0
                    times.append(done)
                    used.append(tail)
                    if n > 1 and used[n - 2] >= 1.0 - EPS:
                        del times[n - 1], used[n - 1]
                else:
                    times += (ready, done)
                    used += (1.0, tail)
                return
            i = self._split(share.ready)
            k = self._split(share.done)
            del times[i + 1 : k], used[i + 1 : k]
            used[i] = 1.0
            if i and used[i - 1] >= 1.0 - EPS:
                del times[i], used[i]
                i -= 1
            if i + 1 < len(times) and used[i + 1] >= 1.0 - EPS:
                del times[i + 1], used[i + 1]
            return
        # one pass over the committed pieces and the share's steps across its stretch
        steps = self.steps[share.first : share.last]
        if not steps or steps[0][0] >= share.done:
            return
        start, end = steps[0][0], share.done
        i = self._split(start)
        k = self._split(end)
        old_t, old_u = times[i:k], used[i:k]
        new_t: list[float] = []
        new_u: list[float] = []
        p, last_p, q, last_q = 0, len(old_t) - 1, 0, len(steps) - 1
        t = start
        while t < end:
            while p < last_p and old_t[p + 1] <= t:
                p += 1
            while q < last_q and steps[q][1] <= t:
                q += 1
            a, b, rate = steps[q]
            if a > t:  # between two steps (no capacity was left): nothing added
                rate, b = 0.0, a
            nxt = old_t[p + 1] if p < last_p and old_t[p + 1] < b else b
            if nxt > end:
                nxt = end
            u = old_u[p] + rate
            if not new_u or abs(new_u[-1] - u) > EPS:
                new_t.append(t)
                new_u.append(u)
            t = nxt
        times[i:k], used[i:k] = new_t, new_u
        # the pieces at both ends join their neighbours when equal
        k = i + len(new_t)
        if k < len(times) and abs(used[k] - used[k - 1]) <= EPS:
            del times[k], used[k]
        if i and abs(used[i] - used[i - 1]) <= EPS:
            del times[i], used[i]

    def _split(self, t: float) -> int:
        """Index of the breakpoint at `t`, inserted if missing."""
        times, used = self.times, self.used
        i = bisect_right(times, t) - 1
        if i >= 0 and times[i] == t:
            return i
        times.insert(i + 1, t)
        used.insert(i + 1, used[i] if i >= 0 else 0.0)
        return i + 1

    def prune(self, before: float) -> None:
        """Drop the committed profile before `before` (no transfer can be ready earlier)."""
        times, used = self.times, self.used
        i = bisect_right(times, before) - 1
        if i > 0:
            del times[:i], used[:i]
        self.prune_at = max(PRUNE_AT, 2 * len(times))


class DmaEngines:
    """The DMA engines of one core under round-robin (processor-sharing) arbitration."""

    def __init__(self, horizon: Callable[[], float], count: int = DMA_ENGINES):
        #: no transfer still to be submitted can be ready before this time
        self.horizon = horizon
        self.count = count
        #: one Engine per class of identical engines, and the engines each stands for
        self.engines = [Engine()]
        self.members: list[tuple[int, ...]] = [tuple(range(count))]
        self.busy_ns = 0.0

    def submit(self, ready: float, chunks, ring: int = 0) -> Transfer:
        """A transfer on DMA ring (queue) `ring` whose data may move from `ready`: `chunks` is
        the work (ns) of every engine when a float, else (engine, work) pairs. Its shares are
        pending. A ring's transfers must be submitted in order, their ready times ascending."""
        transfer = Transfer()
        if type(chunks) is float:
            self.busy_ns += chunks * self.count
            for k, engine in enumerate(self.engines):
                share = Share(ready, chunks, transfer, ring)
                engine.add(share)
                transfer.shares.append((k, share))
            return transfer
        self.busy_ns += sum(work for _, work in chunks)
        work_of = dict(chunks)
        for k in range(len(self.engines)):  # the classes before this transfer
            parts: dict[float | None, list[int]] = {}
            for engine in self.members[k]:
                parts.setdefault(work_of.get(engine), []).append(engine)
            # the class's state is copied for each further part before the new shares join
            classes = [k] + [self._split(k) for _ in range(len(parts) - 1)]
            for c, (work, engines) in zip(classes, parts.items()):
                self.members[c] = tuple(engines)
                if work is not None:
                    share = Share(ready, work, transfer, ring)
                    self.engines[c].add(share)
                    transfer.shares.append((c, share))
        return transfer

    def _split(self, k: int) -> int:
        """A new class of engines in the state of class `k` (its members set by the caller):
        a copy of its committed profile, its pending shares copied onto their transfers."""
        c = len(self.engines)
        original = self.engines[k]
        twin = original.copy()
        for share in original.pending:
            copy = Share(share.ready, share.work, share.owner, share.ring)
            twin.pending.append(copy)
            share.owner.shares.append((c, copy))
        twin.fresh = False
        self.engines.append(twin)
        self.members.append(())
        return c

    def completion(self, transfer: Transfer) -> float:
        """The transfer's provisional completion on the engines (the end of its last share)."""
        shares = transfer.shares
        if len(shares) == 1:  # one class of engines (the usual case), or a resource of one
            k, share = shares[0]
            if not share.fixed:
                engine = self.engines[k]
                if not engine.fresh:
                    engine.simulate()
                if len(engine.pending) > SETTLE_AT or len(engine.times) > engine.prune_at:
                    self._settle(engine)
            return share.done
        done = 0.0
        for k, share in shares:
            if not share.fixed:
                engine = self.engines[k]
                if not engine.fresh:
                    engine.simulate()
                if len(engine.pending) > SETTLE_AT or len(engine.times) > engine.prune_at:
                    self._settle(engine)
            if share.done > done:
                done = share.done
        return done

    def fix(self, transfer: Transfer) -> float:
        """Fix the transfer's completion on the engines (an instruction waits for it)."""
        shares = transfer.shares
        if len(shares) == 1:  # one class of engines (the usual case), or a resource of one
            k, share = shares[0]
            if not share.fixed:
                self.engines[k].fix(share)
            return share.done if share.done > 0.0 else 0.0
        done = 0.0
        for k, share in transfer.shares:
            if not share.fixed:
                self.engines[k].fix(share)
            if share.done > done:
                done = share.done
        return done

    def settle_all(self) -> None:
        """Fix every pending share (nothing more will arrive)."""
        for engine in self.engines:
            if not engine.fresh:
                engine.simulate()
            for share in list(engine.pending):
                engine.fix(share)

    def _settle(self, engine: Engine) -> None:
        """Fix the engine's pending shares that end before any transfer still to be submitted
        can be ready; drop the committed profile before that time."""
        cut = self.horizon()
        pending = engine.pending
        # (pending is in ready order, and a share ends no earlier than it is ready)
        ready = bisect_right(pending, cut, key=_ready)
        for share in [s for s in pending[:ready] if s.done <= cut]:
            engine.fix(share)
        if len(engine.times) > engine.prune_at:
            engine.prune(min(cut, pending[0].ready) if pending else cut)
