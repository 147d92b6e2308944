"""TensorE dI/dt throttling (cost/throttle.py) against its documented behaviour: about 50 % of
peak at first, full rate after a ~3 µs ramp, the cap back after utilisation under 50 % in a
~3 µs window."""

from __future__ import annotations

from math import sqrt

import nkirt
import pytest
from neff_builder import Kernel
from nkirt.cost.throttle import TensorThrottle

MATMUL_NS = 512 / 2.4  # a [128, 512] bf16 MultiplyMoving at TensorE's 2.4 GHz (trn2)


def ramp_duration(work: float, elapsed: float = 0.0) -> float:
    """Solve ∫ cap = work with cap(x) = 0.5 + 0.5·x/3000 from x = elapsed (inside the ramp)."""
    a, b = 0.5 + 0.5 * elapsed / 3000, 0.5 / 3000
    return (-a + sqrt(a * a + 2 * b * work)) / b


def test_first_instruction_runs_near_half_rate():
    throttle = TensorThrottle()
    took = throttle.duration(0.0, MATMUL_NS)
    assert took == pytest.approx(ramp_duration(MATMUL_NS))
    assert 1.8 * MATMUL_NS < took < 2 * MATMUL_NS  # the cap rises during the matmul


def test_busy_tensor_engine_reaches_full_rate_after_the_ramp():
    throttle = TensorThrottle()
    t = 0.0
    durations = []
    for _ in range(40):
        took = throttle.duration(t, MATMUL_NS)
        throttle.record(t, t + took)
        durations.append(took)
        t += took
    assert durations[-1] == pytest.approx(MATMUL_NS)
    # the ramp integrates 0.5→1 over 3 µs: 2,250 ns of work in 3,000 ns, so 750 ns are lost
    assert t == pytest.approx(40 * MATMUL_NS + 750, rel=1e-6)
    assert throttle.throttled_ns == pytest.approx(750, rel=1e-6)
    assert throttle.engagements == 1


def test_cap_ramps_linearly_from_half_to_full():
    throttle = TensorThrottle()
    throttle.duration(0.0, 1.0)
    assert throttle.cap(0.0) == 0.5
    assert throttle.cap(1500.0) == pytest.approx(0.75)
    assert throttle.cap(3000.0) == 1.0
    assert throttle.cap(10_000.0) == 1.0


def run_until_full(throttle: TensorThrottle) -> float:
    t = 0.0
    while True:
        took = throttle.duration(t, MATMUL_NS)
        throttle.record(t, t + took)
        t += took
        if t > 4000:
            return t


def test_idle_over_half_a_window_re_engages_the_cap():
    throttle = TensorThrottle()
    t = run_until_full(throttle) + 1600  # idle 1.6 µs: utilisation < 50 % in a 3 µs window
    assert throttle.duration(t, MATMUL_NS) == pytest.approx(ramp_duration(MATMUL_NS))
    assert throttle.engagements == 2


def test_short_idle_keeps_the_full_rate():
    throttle = TensorThrottle()
    t = run_until_full(throttle) + 1400  # idle 1.4 µs of 3 µs: utilisation still above 50 %
    assert throttle.duration(t, MATMUL_NS) == pytest.approx(MATMUL_NS)
    assert throttle.engagements == 1


def back_to_back(target: str, count: int) -> dict:
    k = Kernel(target)
    k.output("unused", "float32", [1, 1])
    stationary = k.sbuf("w", "bfloat16", [128, 128])
    moving = k.sbuf("x", "bfloat16", [128, 512], byte=1024)
    dst = k.psum("acc", "float32", [128, 512])
    operands = {"dst": k.ap(dst), "stationary": k.ap(stationary), "moving": k.ap(moving)}
    for _ in range(count):
        k.inst("nc_matmul", "tensor", operands, {"accumulate": False})
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True).profile


def test_trn2_matmuls_pay_the_ramp_and_trn1_does_not():
    trn2 = back_to_back("trn2", 30)["engines"]["tensor"]["busy_ns"]
    trn1 = back_to_back("trn1", 30)["engines"]["tensor"]["busy_ns"]
    # LoadStationary 32 cycles, then 30 MultiplyMoving of 512 cycles; the ramp adds 750 ns
    assert trn2 == pytest.approx((32 + 30 * 512) / 2.4 + 750, rel=1e-6)
    assert trn1 == pytest.approx((32 + 30 * 512) / 2.8)


def test_delivered_work_integrates_the_cap():
    throttle = TensorThrottle()
    throttle.duration(0.0, 1.0)  # engages the ramp at 0
    # ∫ 0.5 + 0.5·x/3000 over the 3 µs ramp = 2,250 ns of full-rate work, then 1:1
    assert throttle.delivered(0.0, 3000.0) == pytest.approx(2250.0)
    assert throttle.delivered(0.0, 6000.0) == pytest.approx(5250.0)
    assert throttle.delivered(1500.0, 3000.0) == pytest.approx(1500 * (0.75 + 1.0) / 2)


def busy_first_microsecond_then_start_at(reading: str, t: float) -> TensorThrottle:
    """TensorE busy over [0, 1000) right after the cap engaged, idle until `t`, then a matmul."""
    throttle = TensorThrottle(reading=reading)
    work = 500 + 1000**2 / 12000  # what the cap lets through in the first microsecond
    took = throttle.duration(0.0, work)
    assert took == pytest.approx(1000.0)
    throttle.record(0.0, took)
    throttle.duration(t, MATMUL_NS)
    return throttle


def test_utilisation_counts_the_work_delivered_under_the_cap():
    # at t = 2,300 the ramp's window [0, 2300) left 1,300 ns idle, under half of 3 µs (the
    # busy reading keeps the rate), but TensorE delivered only 583 ns of full-rate work in
    # it: a shortfall of 1,717 ns, over half the window (the delivered reading re-engages)
    delivered = busy_first_microsecond_then_start_at("delivered", 2300.0)
    busy = busy_first_microsecond_then_start_at("busy", 2300.0)
    assert delivered.engagements == 2
    assert busy.engagements == 1
    # and both re-engage past the busy reading's threshold (idle > 1.5 µs)
    assert busy_first_microsecond_then_start_at("busy", 2600.0).engagements == 2
    # and neither before the delivered reading's: shortfall 2,000 − 583 < 1,500
    assert busy_first_microsecond_then_start_at("delivered", 2000.0).engagements == 1


def test_unclipped_window_restarts_the_ramp_until_the_burst_fills_half_a_window():
    clipped, unclipped = TensorThrottle(), TensorThrottle(reading="unclipped")
    for throttle in (clipped, unclipped):
        t, durations = 0.0, []
        for _ in range(6):
            took = throttle.duration(t, MATMUL_NS)
            throttle.record(t, t + took)
            durations.append(took)
            t += took
        throttle.durations = durations
    first = ramp_duration(MATMUL_NS)
    # the idle time before the burst stays in the unclipped window: every matmul starting
    # with under 1.5 µs of busy time behind it starts at the 50 % cap again
    starts = [sum(unclipped.durations[:i]) for i in range(6)]
    restarted = [s for s in starts if s < 1500]
    assert unclipped.engagements == len(restarted) == 4
    assert unclipped.durations[:4] == pytest.approx([first] * 4)
    assert clipped.engagements == 1
    assert clipped.durations[1] < first


def test_an_unknown_reading_is_refused():
    with pytest.raises(ValueError, match="unknown throttle reading"):
        TensorThrottle(reading="average")
