"""The 16 DMA engines of a NeuronCore as shared resources: each keeps its busy intervals.

A transfer's per-engine chunk fills the idle gaps of its engine from the time its data may
start, split over several gaps when needed: transfers issued later in program order but ready
earlier use the idle time before already reserved transfers, and the engine's total work is
conserved.
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
        self.starts: list[list[float]] = [[] for _ in range(count)]
        self.ends: list[list[float]] = [[] for _ in range(count)]
        self.busy_ns = 0.0

    def reserve(self, engine: int, ready: float, duration: float) -> float:
        """Occupy `duration` ns of `engine`'s idle time from `ready` on, in as many pieces as
        the reserved intervals leave gaps; the end of the last piece."""
        self.busy_ns += duration
        starts, ends = self.starts[engine], self.ends[engine]
        if not ends or ready >= ends[-1]:
            if ends and ready == ends[-1]:
                ends[-1] = ready + duration
            else:
                starts.append(ready)
                ends.append(ready + duration)
                if len(starts) > PRUNE_AT:
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
            starts.insert(at, start)
            ends.insert(at, end)
        return t

    def _prune(self, engine: int) -> None:
        done = bisect_right(self.ends[engine], self.horizon())
        del self.starts[engine][:done]
        del self.ends[engine][:done]
