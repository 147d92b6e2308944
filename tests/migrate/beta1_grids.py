"""Beta 1 kernels nkic migrate has to reshape: a grid of rank 7 (six free dimensions, more
than an instruction takes), reductions over loops (`nl.loop_reduce`), a partition grid beside
block indices. Written for the tests of `nkic migrate`."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
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


@nki.jit
def block_row_sums(a):
    """Row sums of each 128 x 64 block of `a`, written into a blocked tile through a partition
    grid `ip, _ = nl.mgrid[0:128, 0:1]` (its `_` also a throwaway name elsewhere in the
    kernel) read in a helper, beside the integer indices of the block and column."""
    _, _, width = a.shape
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((2, nl.par_dim(128), 4), dtype=nl.float32, buffer=nl.sbuf)
    for _section in nl.sequential_range(1):
        ip, _ = nl.mgrid[0:128, 0:1]

        def reduce_block(g):
            for i in nl.affine_range(width // 64):
                x = nl.load(a[g, 0:128, i * 64 : i * 64 + 64])
                sums[g, ip, i] = nisa.tensor_reduce(np.add, x, axis=(1,))  # noqa: B023

        for g in nl.affine_range(2):
            reduce_block(g)
    nl.store(out[0:128, 0:4], value=sums[0])
    nl.store(out[0:128, 4:8], value=sums[1])
    return out
