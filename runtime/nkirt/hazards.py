"""Semaphore verification: flags accesses that race because the program waits for nothing.

The check is by happens-before, not by simulated time: an instance starts after its queue's
previous instance started and after every instance it waits for completed, and a queue
completes its instances in order. Each instance carries a vector clock over the queues
(`clock[r]` = how many instances of queue r are known complete when it starts; one entry per
queue the program uses, its "lane"), so an earlier access by instance n of queue r is ordered
before a later one iff `n < clock[r]`. A vector clock is one int, lane r's count in its bits
[32·r, 32·r + 31) with bit 32·r + 31 a guard bit, so that comparing and merging whole clocks
takes a few integer operations (`clock_max`) instead of a loop over the lanes.

Every access leaves an entry (footprint, queue, instance number, completion time, instruction)
in the buckets its footprint touches. A later access on another queue that reads what an
unordered write produces (RAW), or overwrites what an unordered access reads or writes (WAR,
WAW), is a missing semaphore: a compiler bug, whatever the timing happened to be. On the same
queue the hardware keeps order, so such a read instead waits for the write (the engine's own
interlock); `interlock` reports how long.
"""

from __future__ import annotations

from collections.abc import Callable

from nkirt.access import AccessPattern, Location
from nkirt.program import QUEUES

PRUNE_AT = 64
#: the bits of one lane's count in a vector clock (each lane's field is FIELD_BITS wide)
FIELD = (1 << 31) - 1
FIELD_BITS = 32


def lane_field(lane: int) -> int:
    """The bits of `lane`'s count in a vector clock."""
    return FIELD << (FIELD_BITS * lane)


def guard_bits(lanes: int) -> int:
    """The guard bit of every lane's field in a vector clock of `lanes` lanes."""
    return sum(1 << (FIELD_BITS * r + FIELD_BITS - 1) for r in range(lanes))


def clock_max(a: int, b: int, guards: int) -> int:
    """The elementwise max of vector clocks `a` and `b` (`guards`: `guard_bits`). Per lane,
    (a | guard) - b keeps the guard bit iff a >= b, and never borrows from the next lane (every
    count is below 2**31); the kept guard bits, spread over their lanes, select a's counts."""
    kept = ((a | guards) - b) & guards
    if kept == guards:  # (usually one clock covers the other)
        return a
    pick_a = (kept >> (FIELD_BITS - 1)) * ((1 << FIELD_BITS) - 1)
    return b ^ ((a ^ b) & pick_a)


def clock_entry(clock: int, lane: int) -> int:
    """Lane `lane`'s count in a vector clock."""
    return (clock >> (FIELD_BITS * lane)) & FIELD


def make_clock(counts) -> int:
    """The vector clock of per-lane `counts`."""
    return sum(n << (FIELD_BITS * r) for r, n in enumerate(counts))


#: Footprints spanning more buckets than this are kept in one bucket per memory (WIDE).
MAX_BUCKETS = 64
WIDE = "wide"


class Access:
    """One access by one instruction instance, as remembered by the checker."""

    __slots__ = (
        "row_lo",
        "row_hi",
        "col_lo",
        "col_hi",
        "anchor",
        "lattice",
        "row_period",
        "row_reach",
        "width",
        "dense",
        "end",
        "queue",
        "field",
        "mark",
        "inst",
        "tensor",
    )

    def __init__(
        self,
        ap: AccessPattern,
        where: Location,
        end: float,
        queue: int,
        field: int,
        mark: int,
        inst,
    ):
        _, self.row_lo, self.row_hi, self.col_lo, self.col_hi, anchor = where
        self.anchor = anchor
        self.lattice = ap.lattice
        self.row_period, self.row_reach = ap.row_period, ap.row_reach
        self.width = ap.itemsize
        self.dense = ap.dense and anchor >= 0
        self.end = end
        self.queue = queue
        #: the bits of the queue's lane in vector clocks (`lane_field`), and the instance's
        #: number on its queue in those bits: it is ordered before the holder of vector clock
        #: c iff `c & field > mark`
        self.field = field
        self.mark = mark
        self.inst = inst
        self.tensor = ap.tensor.name

    def overlaps(self, other: Access) -> bool:
        if (
            self.row_hi < other.row_lo
            or other.row_hi < self.row_lo
            or self.col_hi <= other.col_lo
            or other.col_hi <= self.col_lo
        ):
            return False
        if self.anchor < 0 or other.anchor < 0:
            return True
        # rows interleaved with a common period (even and odd rows) do not overlap
        period = self.row_period
        if period and period == other.row_period:
            d = (other.row_lo - self.row_lo) % period
            if d >= self.row_reach and d + other.row_reach <= period:
                return False
        # both touch only bytes anchor + k·lattice + [0, width): compare residues modulo the
        # common lattice (interleaved strided accesses do not overlap)
        g = _gcd(self.lattice, other.lattice)
        if self.width >= g or other.width >= g:
            return True
        d = (other.anchor - self.anchor) % g
        return d < self.width or d + other.width > g

    def covers(self, other: Access) -> bool:
        return (
            self.dense
            and self.row_lo <= other.row_lo
            and other.row_hi <= self.row_hi
            and self.col_lo <= other.col_lo
            and other.col_hi <= self.col_hi
        )


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


class Hazard(Exception):
    """A race between a new access and the earlier access `other` (kind: RAW, WAR or WAW)."""

    def __init__(self, kind: str, other: Access, operand: str):
        super().__init__(kind)
        self.kind = kind
        self.producer = other.inst
        self.producer_tensor = other.tensor
        self.operand = operand


class SemaphoreChecker:
    """Remembers reads and writes per footprint bucket and checks new ones against them.

    `horizon()` returns a time no future instance can start before; `settled()` returns, per
    queue r (a vector clock), how many of r's instances every future instance of the other queues is known to
    follow. An entry that ended by the horizon (no timing effect left) and is settled (no race
    left) is dropped when a bucket grows.
    """

    def __init__(self, horizon: Callable[[], float], settled: Callable[[], int] | None = None):
        self.horizon = horizon
        self.settled = settled
        self.writes: dict[tuple, list[Access]] = {}
        self.reads: dict[tuple, list[Access]] = {}
        #: (key, first bucket, last bucket) -> the bucket list of a narrow footprint
        self._narrow: dict[tuple, list[tuple]] = {}

    def buckets(self, key, ap: AccessPattern, where: Location) -> list[tuple]:
        """The buckets of memory `key` (a buffer name or HBM tensor id) to compare with: those
        the footprint touches, then the key's bucket of wide accesses. A wide footprint (more
        than MAX_BUCKETS buckets, e.g. a stride across a huge HBM tensor) is recorded only in
        that bucket and compares with every bucket of its key."""
        span = ap.bucket
        if ap.buffer == "hbm":
            first, last = where.row_lo // span, where.row_hi // span
        else:
            first, last = where.col_lo // span, (where.col_hi - 1) // span
        if last - first < MAX_BUCKETS:
            # the same few footprints recur every iteration: one list each (never mutated)
            narrow = self._narrow.get((key, first, last))
            if narrow is None:
                narrow = [*((key, b) for b in range(first, last + 1)), (key, WIDE)]
                self._narrow[(key, first, last)] = narrow
            return narrow
        known = {b for table in (self.writes, self.reads) for b in table if b[0] == key}
        return [(key, WIDE), *(b for b in known if b[1] != WIDE)]

    def interlock(self, access: Access, buckets: list[tuple]) -> float:
        """When a read on `access.queue` may start: after same-queue writes it overlaps."""
        ready = 0.0
        for bucket in buckets:
            for w in self.writes.get(bucket, ()):
                if w.queue == access.queue and w.end > ready and w.overlaps(access):
                    ready = w.end
        return ready

    def check_read(self, access: Access, buckets: list[tuple], clock, operand: str):
        """Raise Hazard if an overlapping write of another queue is not ordered before
        `access`, whose instance starts with vector clock `clock`."""
        queue = access.queue
        for bucket in buckets:
            for w in self.writes.get(bucket, ()):
                if w.queue != queue and clock & w.field <= w.mark and w.overlaps(access):
                    raise Hazard("RAW", w, operand)

    def check_reads(self, reads: list[tuple], clock) -> None:
        """Raise Hazard if an overlapping write of another queue is not ordered before a read:
        each (access, buckets, operand) of one instance, whose instance starts with vector
        clock `clock`, in order."""
        writes = self.writes
        for access, buckets, operand in reads:
            queue = access.queue
            for bucket in buckets:
                entries = writes.get(bucket)
                if entries:
                    for w in entries:
                        if w.queue != queue and clock & w.field <= w.mark and w.overlaps(access):
                            raise Hazard("RAW", w, operand)

    def check_writes(self, writes: list[tuple], clock) -> None:
        """Raise Hazard if an overlapping read or write of another queue is not ordered
        before a write: each (access, buckets, operand) of one instance, in order."""
        tables = ((self.writes, "WAW"), (self.reads, "WAR"))
        for access, buckets, operand in writes:
            queue = access.queue
            for table, kind in tables:
                for bucket in buckets:
                    entries = table.get(bucket)
                    if entries:
                        for other in entries:
                            if (
                                other.queue != queue
                                and clock & other.field <= other.mark
                                and other.overlaps(access)
                            ):
                                raise Hazard(kind, other, operand)

    def record(self, reads: list[tuple], writes: list[tuple], end: float) -> None:
        """Remember the checked reads, then the writes, of one instance that completes at
        `end` (each an (access, buckets, operand) of `check_reads` / `check_writes`). A dense
        access that covers an older one (`covers`) makes it redundant: a later read of the same
        queue that ends no earlier an older read, for WAR checks; a write every older access,
        as any later access that would race with them races with this write."""
        table = self.reads
        for access, buckets, _ in reads:
            access.end = end
            dense, queue = access.dense, access.queue
            row_lo, row_hi, col_lo, col_hi = (
                access.row_lo,
                access.row_hi,
                access.col_lo,
                access.col_hi,
            )
            for bucket in buckets[:1] if buckets[0][1] == WIDE else buckets[:-1]:
                entries = table.get(bucket)
                if entries is None:
                    table[bucket] = [access]
                    continue
                if dense:
                    # (usually nothing is covered: look before building the list again)
                    for r in entries:
                        if (
                            r.queue == queue
                            and r.end <= end
                            and r.row_lo >= row_lo
                            and r.row_hi <= row_hi
                            and r.col_lo >= col_lo
                            and r.col_hi <= col_hi
                        ):
                            entries[:] = [
                                r
                                for r in entries
                                if r.queue != queue
                                or r.end > end
                                or r.row_lo < row_lo
                                or r.row_hi > row_hi
                                or r.col_lo < col_lo
                                or r.col_hi > col_hi
                            ]
                            break
                entries.append(access)
                if len(entries) > PRUNE_AT:
                    self._prune(entries)
        table, reads_table = self.writes, self.reads
        for access, buckets, _ in writes:
            dense = access.dense
            row_lo, row_hi, col_lo, col_hi = (
                access.row_lo,
                access.row_hi,
                access.col_lo,
                access.col_hi,
            )
            for bucket in buckets[:1] if buckets[0][1] == WIDE else buckets[:-1]:
                entries = table.get(bucket)
                if entries is None:
                    entries = table[bucket] = []
                if dense:
                    # a dense write covers every older access inside its rectangle
                    for older in (entries, reads_table.get(bucket)):
                        if older:
                            older[:] = [
                                e
                                for e in older
                                if e.row_lo < row_lo
                                or e.row_hi > row_hi
                                or e.col_lo < col_lo
                                or e.col_hi > col_hi
                            ]
                entries.append(access)
                if len(entries) > PRUNE_AT:
                    self._prune(entries)

    def sweep(self) -> None:
        """Forget every access that can no longer race, in all buckets (bounds memory use)."""
        horizon, settled = self.horizon(), self._settled()
        for table in (self.writes, self.reads):
            for bucket in list(table):
                live = [e for e in table[bucket] if e.end > horizon or settled & e.field <= e.mark]
                if live:
                    table[bucket] = live
                else:
                    del table[bucket]

    def _prune(self, entries: list[Access]) -> None:
        horizon, settled = self.horizon(), self._settled()
        entries[:] = [e for e in entries if e.end > horizon or settled & e.field <= e.mark]

    def _settled(self):
        if self.settled is None:  # no happens-before tracking: only timing matters
            return ALL_ORDERED
        return self.settled()


#: A vector clock past every instance (every lane's count at its largest): every access is
#: ordered before its holder.
ALL_ORDERED = make_clock([FIELD] * len(QUEUES))
