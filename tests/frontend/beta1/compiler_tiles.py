"""Beta 1 kernels using neuronxcc.nki.compiler allocations and Beta 1 conveniences."""

import tempfile

import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
from neuronxcc import nki

SCRATCH = tempfile.mkdtemp()


@nki.profile(working_directory=SCRATCH, num_execs=3)
def placed_transpose(a):
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    identity = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=a.dtype)
    eye = nl.ndarray((nl.par_dim(128), 128), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    eye[...] = nl.load(identity)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.ndarray(
            (nl.par_dim(128), 128), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=512)
        )
        t[...] = nl.load(a[i * 128 : (i + 1) * 128, 0:128])
        tp = nl.ndarray(
            (nl.par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0)
        )
        tp[...] = nisa.nc_matmul(t, eye)
        nl.store(out[0:128, i * 128 : (i + 1) * 128], value=tp)
    return out


def column_scale(a, s):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    col = nl.load(s[0 : a.shape[0], 0])
    acc = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    acc[...] += nisa.tensor_scalar(x, np.multiply, col)
    top = nisa.tensor_reduce(op=nl.max, data=acc, axis=1)
    row = nl.load(s[0:1, 0 : a.shape[1]])
    nl.store(out, value=acc + row.broadcast_to(a.shape) + top)
    return out


scaled = nki.baremetal()(column_scale)


@nki.jit
def blocked_sums(a):
    """Row blocks of `a` in a tensor with a block dimension, summed into one tile by an
    affine_range loop (an associative reduction, which Beta 1 lets the loop reorder)."""
    n = a.shape[0] // 128
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    blocks = nl.ndarray((n, nl.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        blocks[i, :, :] = nl.load(a[i * 128 : (i + 1) * 128, :])
    acc = nl.zeros((nl.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        acc[...] += blocks[i]
    nl.store(out, value=acc)
    return out


@nki.jit
def whole_block_axis(a):
    blocks = nl.ndarray((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    t = nl.load(blocks[:, :, :])
    return t


@nki.jit
def hinted_loops(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(a.shape[0] // 128, directives=ncc.no_reorder()):
        for _j in nl.affine_range(1, precise_schedule=True):
            t = nl.load(a[i * 128 : (i + 1) * 128, :])
            nl.store(out[i * 128 : (i + 1) * 128, :], value=t)
    return out
