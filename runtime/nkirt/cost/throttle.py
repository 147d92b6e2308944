"""TensorE dI/dt throttling (Trn2, Trn3): a rate cap that ramps from 50 % to 100 % of peak.

Neuron Explorer's throttling explainer describes the mechanism: TensorE starts at about 50 % of
its maximum utilisation and ramps to full over about 3 µs; if its utilisation falls below 50 %
in any ~3 µs window, the cap comes back. The model:

* the cap at time t is `min(1, START + (1 − START) · (t − ramp_from) / RAMP)`;
* an instruction needing `work` ns at the full rate takes the time over which the cap
  integrates to `work` (so a 213 ns matmul takes 427 ns right after the cap re-engages);
* before each instruction, the idle time of TensorE since the ramp began, inside the trailing
  window, is measured; idle for more than half the window (utilisation below 50 %) re-engages
  the cap from this instruction's start.
"""

from __future__ import annotations

from collections import deque
from math import sqrt

from nkirt.cost.tables import THROTTLE_RAMP_NS, THROTTLE_START, THROTTLE_WINDOW_NS


class TensorThrottle:
    """The throttle state of one TensorE: when its current ramp began and its recent busy
    intervals (those inside the trailing window)."""

    def __init__(
        self,
        start: float = THROTTLE_START,
        ramp_ns: float = THROTTLE_RAMP_NS,
        window_ns: float = THROTTLE_WINDOW_NS,
    ):
        self.start, self.ramp_ns, self.window_ns = start, ramp_ns, window_ns
        self.ramp_from: float | None = None
        self.recent: deque[tuple[float, float]] = deque()
        self._recent_busy = 0.0  # total length of `recent`
        #: engine time lost to the cap (ns): what Explorer counts as throttled
        self.throttled_ns = 0.0
        self.engagements = 0

    def cap(self, t: float) -> float:
        """The rate cap (fraction of peak) at time `t`."""
        if self.ramp_from is None:
            return self.start
        return min(1.0, self.start + (1 - self.start) * (t - self.ramp_from) / self.ramp_ns)

    def _idle_in_window(self, t: float) -> float:
        """Idle time of TensorE in the trailing window since the ramp began. The recorded
        intervals are disjoint, in order and end by `t`, so only the oldest may straddle the
        window's start."""
        lo = max(t - self.window_ns, self.ramp_from)
        recent = self.recent
        while recent and recent[0][1] <= lo:
            begin, end = recent.popleft()
            self._recent_busy -= end - begin
        busy = self._recent_busy
        if recent and recent[0][0] < lo:
            busy -= lo - recent[0][0]
        return (t - lo) - busy

    def duration(self, start: float, work: float) -> float:
        """Wall time of an instruction that starts at `start` and needs `work` ns at the full
        rate; updates the ramp (re-engaging the cap if utilisation fell below 50 %)."""
        if self.ramp_from is None or self._idle_in_window(start) > self.window_ns / 2:
            self.ramp_from = start
            self.recent.clear()
            self._recent_busy = 0.0
            self.engagements += 1
        elapsed = start - self.ramp_from
        if elapsed >= self.ramp_ns or work <= 0:
            return work
        # cap(x) = a + b·x over the ramp, x = time since ramp_from
        a, b = self.start, (1 - self.start) / self.ramp_ns
        c0 = a + b * elapsed
        # work done up to the ramp's end
        to_full = self.ramp_ns - elapsed
        ramp_work = c0 * to_full + b * to_full * to_full / 2
        if work >= ramp_work:
            took = to_full + (work - ramp_work)
        else:  # c0·d + b·d²/2 = work
            took = (-c0 + sqrt(c0 * c0 + 2 * b * work)) / b
        self.throttled_ns += took - work
        return took

    def record(self, begin: float, end: float) -> None:
        """TensorE was busy over [begin, end)."""
        self.recent.append((begin, end))
        self._recent_busy += end - begin
