"""Semantics of the random-number instructions (rng, rand2, dropout, set_rng_seed,
rand_set_state, rand_get_state) and the per-lane generator states they share in ctx.state.

GpSimd and the trn3 Vector engine run XORWOW (Marsaglia 2003, the cuRAND variant); each state
is 6 uint32 words [x, y, z, w, v, d]. The trn1/trn2 Vector LFSR is undocumented; it is
simulated by a PCG64 stream (see docs/numerics.md).
"""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa.accumulators import LANES
from nkirt.isa.operands import dtype_of, fp32_param, from_bits, param, rows
from nkirt.isa.registry import semantics

XORWOW_WORDS = 6
XORWOW_WEYL_INCREMENT = np.uint32(362437)
#: XORWOW states per lane: GpSimd has one, the trn3 Vector engine four (4 values per cycle).
STATES_PER_LANE = {"gpsimd": 1, "vector": 4}
_UNIT_BITS = 24


def xorwow_next(states: np.ndarray) -> np.ndarray:
    """Advance every XORWOW state (..., 6) uint32 in place and return its output (...)."""
    x, v = states[..., 0], states[..., 4]
    t = x ^ (x >> np.uint32(2))
    states[..., 0:4] = states[..., 1:5]
    states[..., 4] = (v ^ (v << np.uint32(4))) ^ (t ^ (t << np.uint32(1)))
    states[..., 5] += XORWOW_WEYL_INCREMENT
    return states[..., 4] + states[..., 5]


def seeded_states(seed: int, engine: str) -> np.ndarray:
    """The XORWOW states of `engine`'s 128 lanes derived from a 32-bit seed."""
    generator = np.random.Generator(np.random.PCG64(int(seed)))
    shape = (LANES, STATES_PER_LANE[engine], XORWOW_WORDS)
    return generator.integers(1, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


def xorwow_states(ctx, engine: str) -> np.ndarray:
    key = f"{engine}_xorwow"
    if key not in ctx.state:
        ctx.state[key] = seeded_states(int(ctx.rng.integers(0, 2**32)), engine)
    return ctx.state[key]


def xorwow_bits(ctx, engine: str, lanes: int, count: int) -> np.ndarray:
    """`count` 32-bit outputs for each of lanes 0..lanes-1; element i of a lane comes from
    that lane's state i % k at its step i // k (k states per lane)."""
    states = xorwow_states(ctx, engine)[:lanes]
    per_lane = states.shape[1]
    steps = -(-count // per_lane)
    draws = [xorwow_next(states) for _ in range(steps)]
    if not draws:
        return np.zeros((lanes, 0), dtype=np.uint32)
    return np.stack(draws, axis=1).reshape(lanes, steps * per_lane)[:, :count]


def lfsr_stream(ctx) -> np.random.Generator:
    """The trn1/trn2 Vector engine generator (stand-in for its LFSR)."""
    if "vector_lfsr" not in ctx.state:
        ctx.state["vector_lfsr"] = np.random.Generator(
            np.random.PCG64(int(ctx.rng.integers(0, 2**32)))
        )
    return ctx.state["vector_lfsr"]


def vector_bits(ctx, shape: tuple[int, ...]) -> np.ndarray:
    """32 random bits per element of a (P, ...) tile from the Vector engine."""
    lanes, count = shape[0], int(np.prod(shape[1:], dtype=np.int64))
    if ctx.target == "trn3":
        return xorwow_bits(ctx, "vector", lanes, count).reshape(shape)
    return lfsr_stream(ctx).integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


def unit_interval(bits: np.ndarray) -> np.ndarray:
    """fp32 uniform values in [0, 1) from the top 24 bits of each 32-bit draw."""
    return (bits >> np.uint32(32 - _UNIT_BITS)).astype(np.float32) * np.float32(2.0**-_UNIT_BITS)


def _engine(attrs, default: str) -> str:
    engine = attrs.get("engine") or "unknown"
    return default if engine == "unknown" else engine


@semantics("rng", reads_outputs=True)
def rng(ctx, ops, attrs):
    dst = ops["dst"]
    dst_dtype = dtype_of("dst", ops, attrs)
    if not dtypes.is_integer(dst_dtype):
        raise ValueError(f"rng: dst dtype {dst_dtype} is not an integer type")
    engine = _engine(attrs, "vector")
    if engine == "gpsimd":
        bits = xorwow_bits(ctx, "gpsimd", dst.shape[0], rows(dst).shape[1])
    elif engine == "vector":
        bits = vector_bits(ctx, rows(dst).shape)
    else:
        raise ValueError(f"rng: unsupported engine {engine!r}")
    return {"dst": from_bits(bits.astype(np.uint64), dst_dtype).reshape(dst.shape)}


@semantics("rand2", reads_outputs=True)
def rand2(ctx, ops, attrs):
    dst = ops["dst"]
    low = fp32_param("min", ops, attrs, 2)
    high = fp32_param("max", ops, attrs, 2)
    bits = xorwow_bits(ctx, "vector", dst.shape[0], rows(dst).shape[1])
    values = low + unit_interval(bits) * (high - low)
    return {"dst": values.astype(np.float32).reshape(dst.shape)}


@semantics("dropout")
def dropout(ctx, ops, attrs):
    data = ops["data"]
    prob = fp32_param("prob", ops, attrs, 2)
    drop = unit_interval(vector_bits(ctx, rows(data).shape)) < prob
    zero = dtypes.cast(np.zeros(1, dtype=np.float32), dtype_of("data", ops, attrs))[0]
    return {"dst": np.where(drop, zero, rows(data)).reshape(data.shape)}


@semantics("set_rng_seed", outputs=())
def set_rng_seed(ctx, ops, attrs):
    seed = int(rows(param("src_seeds", ops, attrs)).view(np.uint32)[0, 0])
    ctx.state["vector_lfsr"] = np.random.Generator(np.random.PCG64(seed))
    ctx.state["vector_xorwow"] = seeded_states(seed, "vector")
    return {}


def _state_engine(attrs, words: int, instruction: str) -> str:
    by_width = {XORWOW_WORDS * k: engine for engine, k in STATES_PER_LANE.items()}
    engine = _engine(attrs, by_width.get(words, "gpsimd"))
    if words != XORWOW_WORDS * STATES_PER_LANE.get(engine, 0):
        raise ValueError(f"{instruction}: {words} state words per partition do not fit {engine}")
    return engine


@semantics("rand_set_state", outputs=())
def rand_set_state(ctx, ops, attrs):
    seeds = rows(ops["src_seeds"]).view(np.uint32)
    engine = _state_engine(attrs, seeds.shape[1], "rand_set_state")
    states = xorwow_states(ctx, engine)
    states[: seeds.shape[0]] = seeds.reshape(seeds.shape[0], -1, XORWOW_WORDS)
    return {}


@semantics("rand_get_state", reads_outputs=True)
def rand_get_state(ctx, ops, attrs):
    dst = ops["dst"]
    words = rows(dst).shape[1]
    engine = _state_engine(attrs, words, "rand_get_state")
    states = xorwow_states(ctx, engine)[: dst.shape[0]].reshape(dst.shape[0], words)
    return {"dst": states.copy().view(dst.dtype).reshape(dst.shape)}
