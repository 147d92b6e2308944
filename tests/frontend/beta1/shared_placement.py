"""Beta 1 kernels allocating `nl.shared_hbm` tensors away from the kernel's top level."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def in_a_branch(a, twice):
    if twice:
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.add(nl.load(a), nl.load(a)))
    else:
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
    return out


def doubled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(a)))
    return out


@nki.jit
def in_a_helper(a):
    return doubled(a)


def store_doubled(a, out):
    nl.store(out, value=nl.add(nl.load(a), nl.load(a)))


@nki.jit
def at_top_level(a, twice):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    if twice:
        store_doubled(a, out)
    else:
        nl.store(out, value=nl.load(a))
    return out
