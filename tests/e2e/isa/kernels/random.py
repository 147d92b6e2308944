"""Random numbers: XORWOW state load/store, rng, rand2, dropout, set_rng_seed."""

import nki
import nki.isa as nisa
import nki.language as nl


def _load(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def state_then_rng(states, F=8, dtype="uint32", engine="gpsimd", times=2):
    """Load XORWOW states, draw `times` tiles of raw bits, read the states back."""
    P, W = states.shape
    eng = getattr(nisa.engine, engine)
    nisa.rand_set_state(src_seeds=_load(states), engine=eng)
    outs = []
    for i in range(times):
        t = nl.ndarray((P, F), dtype=dtype, buffer=nl.sbuf)
        nisa.rng(dst=t, engine=eng)
        outs.append(_store(t))
    back = nl.ndarray((P, W), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rand_get_state(dst=back, engine=eng)
    outs.append(_store(back))
    return tuple(outs)


@nki.jit
def state_then_rand2(states, x, lo=-2.0, hi=3.0, dtype="float32"):
    """trn3 Vector XORWOW: rand2 then dropout from the loaded states."""
    P, W = states.shape
    nisa.rand_set_state(src_seeds=_load(states), engine=nisa.engine.vector)
    t = nl.ndarray((P, 8), dtype=dtype, buffer=nl.sbuf)
    nisa.rand2(dst=t, min=lo, max=hi)
    d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dropout(dst=d, data=_load(x), prob=0.5)
    return _store(t), _store(d)


@nki.jit
def seeded_vector(seed, x, prob=0.3, dtype="int16"):
    """set_rng_seed, then Vector rng and dropout."""
    P, F = x.shape
    nisa.set_rng_seed(src_seeds=_load(seed))
    t = nl.ndarray((P, F), dtype=dtype, buffer=nl.sbuf)
    nisa.rng(dst=t, engine=nisa.engine.vector)
    d = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dropout(dst=d, data=_load(x), prob=prob)
    return _store(t), _store(d)


@nki.jit
def dropout_tile_prob(x, prob):
    P, F = x.shape
    d = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dropout(dst=d, data=_load(x), prob=_load(prob))
    return _store(d)
