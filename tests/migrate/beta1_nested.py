"""Beta 1 value-returning `nisa` calls written inside other expressions: nested in a call's
arguments, passed as a store's value, a matmul into PSUM, and one under a conditional
expression that may not run (left as a manual step)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def nested_chain(a, w):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    prod = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    wt = nl.load(w)
    # halve, add one, then exponentiate
    e = nl.exp(nisa.tensor_scalar(nisa.tensor_scalar(t, np.multiply, 0.5), np.add, 1.0))
    nl.store(out, value=nisa.tensor_scalar(e, np.multiply, 2.0))
    nl.store(prod, value=nl.copy(nisa.nc_matmul(wt, t), dtype=nl.float32))
    return out, prod


@nki.jit
def conditional(a, twice=False):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    e = nl.exp(nisa.tensor_scalar(t, np.multiply, 2.0) if twice else t)
    nl.store(out, value=e)
    return out
