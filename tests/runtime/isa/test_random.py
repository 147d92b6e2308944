"""rng, rand2, dropout, set_rng_seed, rand_set_state, rand_get_state: XORWOW per lane."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.isa import SEMANTICS

from .conftest import make_ctx

F = np.float32
MASK = 0xFFFFFFFF


def run(ctx, instruction, ops, **attrs):
    return SEMANTICS[instruction].fn(ctx, ops, attrs)


def xorwow(state):
    """Marsaglia's xorwow with a Weyl counter (cuRAND): state = [x, y, z, w, v, d]."""
    x, y, z, w, v, d = state
    t = (x ^ (x >> 2)) & MASK
    x, y, z, w = y, z, w, v
    v = (v ^ ((v << 4) & MASK)) ^ (t ^ ((t << 1) & MASK))
    d = (d + 362437) & MASK
    state[:] = [x, y, z, w, v, d]
    return (v + d) & MASK


def some_states(lanes, words, seed=9):
    return (
        np.random.default_rng(seed)
        .integers(1, 2**32, (lanes, words), dtype=np.uint64)
        .astype(np.uint32)
    )


def test_gpsimd_rng_is_xorwow_per_lane_after_rand_set_state(ctx):
    states = some_states(3, 6)
    run(ctx, "rand_set_state", {"src_seeds": states}, engine="gpsimd")
    got = run(ctx, "rng", {"dst": np.zeros((3, 5), np.uint32)}, engine="gpsimd")["dst"]
    for lane in range(3):
        state = [int(v) for v in states[lane]]
        np.testing.assert_array_equal(got[lane], [xorwow(state) for _ in range(5)])
    after = run(ctx, "rand_get_state", {"dst": np.zeros((3, 6), np.uint32)}, engine="gpsimd")
    for lane in range(3):
        state = [int(v) for v in states[lane]]
        for _ in range(5):
            xorwow(state)
        np.testing.assert_array_equal(after["dst"][lane], state)


def test_vector_states_interleave_four_generators_per_lane(ctx3):
    states = some_states(2, 24)
    run(ctx3, "rand_set_state", {"src_seeds": states}, engine="vector")
    got = run(ctx3, "rand2", {"dst": np.zeros((2, 6), F)}, min=0.0, max=1.0)["dst"]
    for lane in range(2):
        generators = [[int(v) for v in states[lane, 6 * k : 6 * k + 6]] for k in range(4)]
        bits = [xorwow(generators[i % 4]) for i in range(6)]
        want = [F(b >> 8) * F(2.0**-24) for b in bits]
        np.testing.assert_array_equal(got[lane], want)


def test_rand_set_state_infers_the_engine_from_the_width(ctx3):
    run(ctx3, "rand_set_state", {"src_seeds": some_states(1, 24)})
    assert "vector_xorwow" in ctx3.state
    with pytest.raises(ValueError, match="rand_set_state"):
        run(ctx3, "rand_set_state", {"src_seeds": some_states(1, 7)})


@pytest.mark.parametrize(("dtype", "bits"), [(np.uint8, 8), (np.int16, 16), (np.int32, 32)])
def test_rng_truncates_to_the_low_bits(ctx, dtype, bits):
    states = some_states(2, 6)
    run(ctx, "rand_set_state", {"src_seeds": states}, engine="gpsimd")
    got = run(ctx, "rng", {"dst": np.zeros((2, 3), dtype)}, engine="gpsimd")["dst"]
    state = [int(v) for v in states[1]]
    want = [xorwow(state) & ((1 << bits) - 1) for _ in range(3)]
    unsigned = np.dtype(f"uint{bits}")
    np.testing.assert_array_equal(got[1].view(unsigned), want)


def test_rng_rejects_float_dst(ctx):
    with pytest.raises(ValueError, match="rng"):
        run(ctx, "rng", {"dst": np.zeros((1, 2), F)})


def test_vector_rng_is_reproducible_after_set_rng_seed():
    seed = np.array([[1234]], np.int32)
    draws = []
    for _ in range(2):
        ctx = make_ctx("trn2", seed=len(draws))
        run(ctx, "set_rng_seed", {"src_seeds": seed})
        draws.append(run(ctx, "rng", {"dst": np.zeros((4, 8), np.uint32)})["dst"])
    np.testing.assert_array_equal(draws[0], draws[1])
    other = make_ctx("trn2")
    run(other, "set_rng_seed", {"src_seeds": np.array([[99]], np.int32)})
    assert not np.array_equal(
        run(other, "rng", {"dst": np.zeros((4, 8), np.uint32)})["dst"], draws[0]
    )


def test_rand2_stays_in_range_per_partition(ctx3):
    low = np.array([[-1.0], [10.0]], F)
    high = np.array([[1.0], [10.5]], F)
    got = run(ctx3, "rand2", {"dst": np.zeros((2, 2000), F), "min": low, "max": high})["dst"]
    assert (got[0] >= -1).all() and (got[0] <= 1).all() and abs(got[0].mean()) < 0.1
    assert (got[1] >= 10).all() and (got[1] <= 10.5).all()


def test_dropout_zeroes_about_prob_and_keeps_other_bits(ctx):
    data = np.random.default_rng(2).standard_normal((4, 4000)).astype(ml_dtypes.bfloat16)
    prob = np.array([[0.0], [0.25], [0.5], [1.0]], F)
    got = run(ctx, "dropout", {"data": data, "prob": prob})["dst"]
    kept = got.view(np.uint16) == data.view(np.uint16)
    dropped = got.astype(F) == 0
    assert (kept | dropped).all()
    fractions = dropped.mean(axis=1)
    assert fractions[0] == 0 and fractions[3] == 1
    assert abs(fractions[1] - 0.25) < 0.03 and abs(fractions[2] - 0.5) < 0.03


def test_same_context_seed_gives_the_same_stream():
    a = run(make_ctx(seed=5), "rng", {"dst": np.zeros((2, 4), np.uint32)}, engine="gpsimd")
    b = run(make_ctx(seed=5), "rng", {"dst": np.zeros((2, 4), np.uint32)}, engine="gpsimd")
    np.testing.assert_array_equal(a["dst"], b["dst"])
