"""A Beta 1 kernel that branches on an index grid, which has no single truth value."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def branch_on_grid(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i_p, i_f])
    if 2 * i_p + 1 < 64:  # a mask written as a branch
        t = nl.exp(t)
    u = nl.exp(t) if i_f else t  # a grid as a truth value
    nl.store(out[i_p, i_f], value=u)
    return out
