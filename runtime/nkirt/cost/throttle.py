"""TensorE dI/dt throttling (Trn2, Trn3): a rate cap that ramps from 50 % to 100 % of peak.

Neuron Explorer's throttling explainer describes the mechanism: TensorE starts at about 50 % of
its maximum utilisation and ramps to full over about the first 3 µs after work begins; if its
utilisation drops below 50 % over any ~3 µs window, the limit re-engages and the next burst
again starts at about 50 %. The model:

* the cap at time t is `min(1, START + (1 − START) · (t − ramp_from) / RAMP)`;
* an instruction needing `work` ns at the full rate takes the time over which the cap
  integrates to `work` (so a 213 ns matmul takes 427 ns right after the cap re-engages);
* before each instruction, TensorE's utilisation over the trailing window is measured and,
  below 50 %, the cap re-engages from this instruction's start.

"Utilisation" has three readings (docs/cost-model.md, TensorE dI/dt throttling, discusses
them); `reading` selects one:

* `delivered` (the model): the work TensorE delivered in the window as a fraction of what the
  full rate would deliver — the quantity the cap itself limits ("50 % utilization of maximum
  utilization"), so busy time under the cap counts at the cap. The window does not reach
  before the current ramp began (the ramp is "the first ~3 µs after work begins").
* `busy`: the share of the window TensorE was busy, whatever its rate; window clipped the same.
* `unclipped`: the busy share over the whole trailing window, also before the ramp began;
  while it is below 50 % each instruction starts the ramp again.
"""

from __future__ import annotations

from collections import deque
from math import sqrt

from nkirt.cost.tables import THROTTLE_RAMP_NS, THROTTLE_START, THROTTLE_WINDOW_NS

READINGS = ("delivered", "busy", "unclipped")


class TensorThrottle:
    """The throttle state of one TensorE: when its current ramp began and its recent busy
    intervals (those inside the trailing window)."""

    def __init__(
        self,
        start: float = THROTTLE_START,
        ramp_ns: float = THROTTLE_RAMP_NS,
        window_ns: float = THROTTLE_WINDOW_NS,
        reading: str = "delivered",
    ):
        if reading not in READINGS:
            raise ValueError(f"unknown throttle reading {reading!r} (one of {READINGS})")
        self.start, self.ramp_ns, self.window_ns = start, ramp_ns, window_ns
        self.reading = reading
        self._delivered = reading == "delivered"
        self._clipped = reading != "unclipped"
        self.ramp_from: float | None = None
        #: busy intervals (begin, end, what each counts: its length or the work it delivered)
        self.recent: deque[tuple[float, float, float]] = deque()
        self._recent_busy = 0.0  # total of what `recent` counts
        #: engine time lost to the cap (ns): what Explorer counts as throttled
        self.throttled_ns = 0.0
        self.engagements = 0

    def cap(self, t: float) -> float:
        """The rate cap (fraction of peak) at time `t`."""
        if self.ramp_from is None:
            return self.start
        return min(1.0, self.start + (1 - self.start) * (t - self.ramp_from) / self.ramp_ns)

    def delivered(self, begin: float, end: float) -> float:
        """Work (ns at the full rate) a TensorE busy over [begin, end) delivers under the cap of
        the current ramp: the integral of the cap."""
        if end <= begin:
            return 0.0
        if self.ramp_from is None:
            return self.start * (end - begin)
        full_at = self.ramp_from + self.ramp_ns
        work = max(0.0, end - max(begin, full_at))  # at the full rate
        b, e = min(begin, full_at), min(end, full_at)
        if e > b:
            work += (e - b) * (self.cap(b) + self.cap(e)) / 2  # the cap is linear there
        return work

    def _shortfall(self, t: float) -> float:
        """The window's time minus what TensorE's activity in it counts (its busy time, or the
        work it delivered): more than half the window means utilisation below 50 %. The
        recorded intervals are disjoint, in order and end by `t`, so only the oldest may
        straddle the window's start."""
        lo = t - self.window_ns
        if self._clipped and self.ramp_from > lo:
            lo = self.ramp_from
        recent = self.recent
        while recent and recent[0][1] <= lo:
            self._recent_busy -= recent.popleft()[2]
        busy = self._recent_busy
        if recent and recent[0][0] < lo:
            begin = recent[0][0]
            busy -= self.delivered(begin, lo) if self._delivered else lo - begin
        return (t - lo) - busy if self._clipped else self.window_ns - busy

    def duration(self, start: float, work: float) -> float:
        """Wall time of an instruction that starts at `start` and needs `work` ns at the full
        rate; updates the ramp (re-engaging the cap if utilisation fell below 50 %)."""
        if self.ramp_from is None or self._shortfall(start) > self.window_ns / 2:
            self.ramp_from = start
            if self._clipped:
                # what came before the ramp is outside every window measured from now on
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
        counts = end - begin
        if self._delivered and begin < self.ramp_from + self.ramp_ns:
            counts = self.delivered(begin, end)
        self.recent.append((begin, end, counts))
        self._recent_busy += counts
