"""Beta 1 kernels written for the nkic tests: value-returning GpSimd / Vector instructions."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gather_rows(src, index, per):
    """nisa.local_gather of every index, `per` elements each; the tile it returns stored
    whole."""
    P, K = index.shape
    out = nl.ndarray((P, K, 16, per), dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.load(src)
    i = nl.load(index)
    g = nisa.local_gather(s, i, per)
    nl.store(out, value=g)
    return out
