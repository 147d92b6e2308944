"""Beta 1 kernels whose arguments current NKI spells differently: numpy scalars as immediates,
`nl.max` as an ALU operator, numpy functions passed in as operators, `perf_mode` strings."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def shifted_max(a):
    """max(a + 2, 0.5) per element, the immediates given as numpy scalars."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    u = nisa.tensor_scalar(t, np.add, np.float32(2), op1=nl.max, operand1=np.float32(0.5))
    nl.store(out, value=u)
    return out


@nki.jit
def compared(a, b, op):
    """op(a, b) per element, `op` an operator given by the caller."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    z = nisa.tensor_tensor(x, y, op)
    nl.store(out, value=z)
    return out
