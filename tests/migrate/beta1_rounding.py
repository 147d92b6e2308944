"""A Beta 1 kernel written for the nkic migrate tests of the verification's tolerance: the
tests compare it with migrations written by hand that round differently."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def row_sums(a):
    # softmax's denominators: the row sums of exp(a), in float32 throughout
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    e = nl.exp(x)
    s = nl.sum(e, axis=1)
    nl.store(out, value=s)
    return out
