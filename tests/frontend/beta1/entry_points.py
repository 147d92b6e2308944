"""Beta 1 kernels under each entry point: the tracing jit through an alias, baremetal and
benchmark (their execution modes do not change what the kernel computes)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

nki_jit = nki.trace


@nki_jit
def traced(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, 0:64], value=nl.load(a[0:128, 0:64]) * 2.0)
    return out


@nki.baremetal
def bare(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, 0:64], value=nl.load(a[0:128, 0:64]) + 1.0)
    return out


@nki.benchmark(warmup=2, iters=10)
def timed(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, 0:64], value=nl.load(a[0:128, 0:64]) - 3.0)
    return out
