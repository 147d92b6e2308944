"""Beta 1 kernels whose index grids nkic migrate has to reshape: a grid of rank 7 (six free
dimensions, more than an instruction takes). Written for the tests of `nkic migrate`."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def upsample_blend(a):
    """Each 2 x 2 x 2 block of the output mixes the input cell it falls in with the one at
    the opposite corner: one statement over a grid of six free dimensions."""
    out = nl.ndarray((128, 6, 6, 6), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    res = nl.zeros((128, 6, 6, 6), dtype=a.dtype)
    i_p, i_a, i_b, i_c, i_x, i_y, i_z = nl.mgrid[0:128, 0:2, 0:2, 0:2, 0:3, 0:3, 0:3]
    res[i_p, 2 * i_x + i_a, 2 * i_y + i_b, 2 * i_z + i_c] = nl.add(
        nl.multiply(t[i_p, i_x + i_a, i_y + i_b, i_z + i_c], 0.75),
        nl.multiply(t[i_p, i_x + (-1 * i_a + 1), i_y + (-1 * i_b + 1), i_z + (-1 * i_c + 1)], 0.25),
    )
    nl.store(out, value=res)
    return out


@nki.jit
def column_sums(a, b):
    """The sum of the four 128 x 64 blocks of `a` (`np.add`) and the maximum of those of `b`
    (`nl.maximum`, from a start of zero), each reduced over the loop with `nl.loop_reduce`."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    acc[0] = nl.load(a[0:128, 0:64])
    acc[1] = 0.0
    for i in nl.affine_range(3):
        x = nl.load(a[0:128, 64 * i + 64 : 64 * i + 128])
        acc[0] = nl.loop_reduce(x, np.add, loop_indices=[i], dtype=nl.float32)
    for j in nl.affine_range(4):
        y = nl.load(b[0:128, 64 * j : 64 * j + 64])
        acc[1] = nl.loop_reduce(y, op=nl.maximum, loop_indices=[j])
    nl.store(out[0:128, 0:64], value=acc[0])
    nl.store(out[0:128, 64:128], value=acc[1])
    return out
