"""Semaphore verification: flags accesses that race because the program waits for nothing.

Every access leaves an entry (footprint, completion time, queue, instruction) in the buckets
its footprint touches. A later access on another queue that reads what an unfinished write
produces (RAW), or overwrites what an unfinished access still reads or writes (WAR, WAW), is a
missing semaphore: a compiler bug. On the same queue the hardware keeps order, so such a
read instead waits for the write (the engine's own interlock); `interlock` reports how long.
"""

from __future__ import annotations

from collections.abc import Callable

from nkirt.access import AccessPattern, Location

PRUNE_AT = 64


class Access:
    """One access by one instruction instance, as remembered by the checker."""

    __slots__ = (
        "row_lo",
        "row_hi",
        "col_lo",
        "col_hi",
        "anchor",
        "lattice",
        "width",
        "dense",
        "end",
        "queue",
        "inst",
    )

    def __init__(self, ap: AccessPattern, where: Location, end: float, queue: int, inst):
        self.row_lo, self.row_hi = where.row_lo, where.row_hi
        self.col_lo, self.col_hi = where.col_lo, where.col_hi
        self.anchor = where.anchor
        self.lattice = ap.lattice
        self.width = ap.itemsize
        self.dense = ap.dense and where.anchor >= 0
        self.end = end
        self.queue = queue
        self.inst = inst

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
    """A race between `consumer` and the earlier `producer` access (kind: RAW, WAR or WAW)."""

    def __init__(self, kind: str, producer, operand: str):
        super().__init__(kind)
        self.kind = kind
        self.producer = producer
        self.operand = operand


class SemaphoreChecker:
    """Remembers recent reads and writes per footprint bucket and checks new ones against them.

    `horizon()` returns a time no future instance can start before; entries that ended by then
    can never race again and are dropped when a bucket grows.
    """

    def __init__(self, horizon: Callable[[], float]):
        self.horizon = horizon
        self.writes: dict[tuple, list[Access]] = {}
        self.reads: dict[tuple, list[Access]] = {}

    @staticmethod
    def buckets(key, ap: AccessPattern, where: Location) -> list[tuple]:
        """The buckets of memory `key` (a buffer name or HBM tensor id) the footprint touches."""
        if ap.buffer == "hbm":
            lo, hi, span = where.row_lo, where.row_hi, ap.bucket
        else:
            lo, hi, span = where.col_lo, where.col_hi - 1, ap.bucket
        return [(key, b) for b in range(lo // span, hi // span + 1)]

    def interlock(self, access: Access, buckets: list[tuple]) -> float:
        """When a read on `access.queue` may start: after same-queue writes it overlaps."""
        ready = 0.0
        for bucket in buckets:
            for w in self.writes.get(bucket, ()):
                if w.queue == access.queue and w.end > ready and w.overlaps(access):
                    ready = w.end
        return ready

    def check_read(self, access: Access, buckets: list[tuple], start: float, operand: str):
        for bucket in buckets:
            for w in self.writes.get(bucket, ()):
                if w.queue != access.queue and w.end > start and w.overlaps(access):
                    raise Hazard("RAW", w.inst, operand)

    def check_write(self, access: Access, buckets: list[tuple], start: float, operand: str):
        for table, kind in ((self.writes, "WAW"), (self.reads, "WAR")):
            for bucket in buckets:
                for other in table.get(bucket, ()):
                    if other.queue != access.queue and other.end > start and other.overlaps(access):
                        raise Hazard(kind, other.inst, operand)

    def record_read(self, access: Access, buckets: list[tuple]) -> None:
        for bucket in buckets:
            entries = self.reads.setdefault(bucket, [])
            if access.dense:
                # a later read of the same queue that covers an older one and ends no earlier
                # makes it redundant for WAR checks
                entries[:] = [
                    r
                    for r in entries
                    if not (r.queue == access.queue and r.end <= access.end and access.covers(r))
                ]
            entries.append(access)
            if len(entries) > PRUNE_AT:
                self._prune(entries)

    def record_write(self, access: Access, buckets: list[tuple]) -> None:
        for bucket in buckets:
            entries = self.writes.setdefault(bucket, [])
            if access.dense:
                # a checked write that covers older accesses supersedes them: any later access
                # that would race with them races with this write
                entries[:] = [w for w in entries if not access.covers(w)]
                reads = self.reads.get(bucket)
                if reads:
                    reads[:] = [r for r in reads if not access.covers(r)]
            entries.append(access)
            if len(entries) > PRUNE_AT:
                self._prune(entries)

    def sweep(self) -> None:
        """Forget every access that can no longer race, in all buckets (bounds memory use)."""
        horizon = self.horizon()
        for table in (self.writes, self.reads):
            for bucket in list(table):
                live = [e for e in table[bucket] if e.end > horizon]
                if live:
                    table[bucket] = live
                else:
                    del table[bucket]

    def _prune(self, entries: list[Access]) -> None:
        horizon = self.horizon()
        entries[:] = [e for e in entries if e.end > horizon]
