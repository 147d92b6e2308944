"""The 16 DMA engines of a NeuronCore as shared resources: each keeps its busy intervals.

A transfer's per-engine chunk fills the idle gaps of its engine from the time its data may
start, split over several gaps when needed: transfers issued later in program order but ready
earlier use the idle time before already reserved transfers, and the engine's total work is
conserved.

While every reservation has given all resources the same work at the same time (the usual case:
`[128, x]` transfers spread evenly over the 16 engines), their intervals are identical and only
the first resource's are kept (`shared`); the others are copied from it at the first reservation
that differs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from nkirt.cost.tables import DMA_ENGINES

PRUNE_AT = 64


class DmaRings:
    """Busy intervals of each of `count` shared resources (by default the 16 DMA engines), as
    sorted parallel lists of starts and ends."""

    def __init__(self, horizon: Callable[[], float], count: int = DMA_ENGINES):
        self.horizon = horizon
        self.count = count
        self.starts: list[list[float]] = [[] for _ in range(count)]
        self.ends: list[list[float]] = [[] for _ in range(count)]
        #: per resource, the interval count beyond which it is next pruned
        self.prune_at = [PRUNE_AT] * count
        self.busy_ns = 0.0
        #: every resource has the intervals of resource 0 (the others' lists are stale)
        self.shared = True

    def reserve_all(self, ready: float, duration: float) -> float:
        """`reserve` the same work on every resource; the end of the last piece."""
        if not self.shared:
            return max(self.reserve(k, ready, duration) for k in range(self.count))
        self.busy_ns += duration * (self.count - 1)
        return self._reserve(0, ready, duration)

    def reserve(self, engine: int, ready: float, duration: float) -> float:
        """Occupy `duration` ns of `engine`'s idle time from `ready` on, in as many pieces as
        the reserved intervals leave gaps; the end of the last piece."""
        if self.shared and self.count > 1:
            self.shared = False
            for k in range(1, self.count):
                self.starts[k], self.ends[k] = list(self.starts[0]), list(self.ends[0])
                self.prune_at[k] = self.prune_at[0]
        return self._reserve(engine, ready, duration)

    def _reserve(self, engine: int, ready: float, duration: float) -> float:
        self.busy_ns += duration
        starts, ends = self.starts[engine], self.ends[engine]
        if not ends or ready >= ends[-1]:
            if ends and ready == ends[-1]:
                ends[-1] = ready + duration
            else:
                starts.append(ready)
                ends.append(ready + duration)
                if len(starts) > self.prune_at[engine]:
                    self._prune(engine)
            return ready + duration
        i = bisect_right(starts, ready)
        t = max(ready, ends[i - 1]) if i > 0 else ready
        left = duration
        pieces = []
        while left > 0:
            gap_end = starts[i] if i < len(starts) else float("inf")
            if gap_end > t:
                piece = min(left, gap_end - t)
                pieces.append((t, t + piece))
                left -= piece
                t += piece
            if left > 0:
                t = max(t, ends[i])
                i += 1
        for start, end in pieces:
            at = bisect_right(starts, start)
            # a piece that exactly fills a gap joins its neighbours (the same busy time, fewer
            # intervals for later reservations to walk)
            if at and ends[at - 1] == start:
                if at < len(starts) and starts[at] == end:
                    ends[at - 1] = ends[at]
                    del starts[at], ends[at]
                else:
                    ends[at - 1] = end
            elif at < len(starts) and starts[at] == end:
                starts[at] = start
            else:
                starts.insert(at, start)
                ends.insert(at, end)
        return t

    def _prune(self, engine: int) -> None:
        done = bisect_right(self.ends[engine], self.horizon())
        del self.starts[engine][:done]
        del self.ends[engine][:done]
        # the intervals still ahead of the horizon wait for the next doubling: pruning at every
        # append while they cannot go would cost a horizon per reservation
        self.prune_at[engine] = max(PRUNE_AT, 2 * len(self.ends[engine]))
