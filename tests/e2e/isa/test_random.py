"""Random-number instructions: bit-exact XORWOW from loaded states, determinism given a seed."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import TARGETS, assert_bits, f32, rnd, run

FAM = "random"


def xorwow(state, n):
    """Marsaglia XORWOW (cuRAND variant) from ISA §5.5 / docs/numerics.md §9."""
    x, y, z, w, v, d = (int(s) for s in state)
    m = 0xFFFFFFFF
    out = []
    for _ in range(n):
        t = x ^ (x >> 2)
        x, y, z, w = y, z, w, v
        v = (v ^ ((v << 4) & m)) ^ (t ^ ((t << 1) & m))
        d = (d + 362437) & m
        out.append((v + d) & m)
    return out, [x, y, z, w, v, d]


def states(P, k, seed=0):
    return (
        np.random.default_rng(seed)
        .integers(1, 2**32, (P, 6 * k), dtype=np.uint64)
        .astype(np.uint32)
    )


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize("dtype", ["uint32", "int16", "uint8"])
def test_gpsimd_rng_from_loaded_states(target, dtype):
    P, F = 6, 8
    st = states(P, 1, 1)
    r0, r1, back = run(FAM, "state_then_rng", [st], target, F=F, dtype=dtype, engine="gpsimd")
    want0, want1, want_state = [], [], []
    for p in range(P):
        bits, s = xorwow(st[p], 2 * F)
        want0.append(bits[:F])
        want1.append(bits[F:])
        want_state.append(s)
    bits_dt = np.dtype(dtype)

    def trunc(b):
        return (
            (np.array(b, np.uint64) & np.uint64(2 ** (8 * bits_dt.itemsize) - 1))
            .astype(f"u{bits_dt.itemsize}")
            .view(bits_dt)
        )

    assert_bits(r0, trunc(want0))
    assert_bits(r1, trunc(want1))
    assert_bits(back, np.array(want_state, np.uint32))


def test_vector_rng_from_loaded_states_trn3():
    P, F = 4, 10
    st = states(P, 4, 2)
    r0, r1, back = run(FAM, "state_then_rng", [st], "trn3", F=F, dtype="uint32", engine="vector")
    # four states per lane; element i from state i % 4 at its step i // 4
    for p in range(P):
        seqs, finals = [], []
        for k in range(4):
            bits, s = xorwow(st[p, 6 * k : 6 * k + 6], 6)
            seqs.append(bits)
            finals.append(s)
        e0 = [seqs[i % 4][i // 4] for i in range(F)]  # steps 0..2
        # the second draw starts after 3 steps of every state
        e1 = [seqs[i % 4][3 + i // 4] for i in range(F)]
        assert list(r0[p]) == e0
        assert list(r1[p]) == e1
        assert list(back[p]) == [w for f in finals for w in f]


def test_rand2_and_dropout_from_vector_states_trn3():
    P = 3
    st = states(P, 4, 3)
    x = rnd((P, 8), seed=4)
    got, d = run(FAM, "state_then_rand2", [st, x], "trn3", lo=-2.0, hi=3.0)
    seqs = [[xorwow(st[p, 6 * k : 6 * k + 6], 4)[0] for k in range(4)] for p in range(P)]

    def unit(b):
        return f32((b >> 8) * 2.0**-24)

    want = np.zeros((P, 8), np.float32)
    wd = x.copy()
    for p in range(P):
        for i in range(8):
            want[p, i] = f32(f32(-2.0) + f32(unit(seqs[p][i % 4][i // 4]) * f32(5.0)))
            u = unit(seqs[p][i % 4][2 + i // 4])
            if u < f32(0.5):
                wd[p, i] = 0.0
    assert_bits(got, want)
    assert_bits(d, wd)
    assert (got >= -2).all() and (got < 3).all()


@pytest.mark.parametrize("target", TARGETS)
def test_set_rng_seed_makes_vector_rng_and_dropout_deterministic(target):
    x = rnd((16, 64), seed=5) + 10  # no zeros
    seed = np.array([[1234]], np.int32)
    a = run(FAM, "seeded_vector", [seed, x], target, seed=0)
    b = run(FAM, "seeded_vector", [seed, x], target, seed=99)  # executor seed irrelevant
    c = run(FAM, "seeded_vector", [np.array([[4321]], np.int32), x], target)
    for u, v in zip(a, b):
        assert_bits(u, v)
    assert not np.array_equal(a[0], c[0])
    r, d = a
    assert r.dtype == np.int16
    dropped = d == 0
    assert_bits(d[~dropped], x[~dropped])  # kept elements bit for bit, not rescaled
    assert 0.15 < dropped.mean() < 0.45


@pytest.mark.parametrize("target", TARGETS)
def test_dropout_per_partition_prob(target):
    x = rnd((4, 256), seed=6) + 10
    prob = f32([[0.0], [1.0], [0.5], [0.9]])
    d = run(FAM, "dropout_tile_prob", [x, prob], target)
    assert_bits(d[0], x[0])
    assert (d[1] == 0).all()
    assert 0.3 < (d[2] == 0).mean() < 0.7 and 0.75 < (d[3] == 0).mean()
