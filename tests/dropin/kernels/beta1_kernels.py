"""Beta 1 kernels (neuronxcc.nki) for the stand-in tests."""

import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit(mode="baremetal")
def grid_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 64 + nl.arange(64)[None, :]
    nl.store(out[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return out


@nki.benchmark(warmup=2, iters=5)
def scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) * 3.0)
    return out
