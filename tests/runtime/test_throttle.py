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
