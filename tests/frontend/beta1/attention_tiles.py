"""Beta 1 attention-style kernels written for the nkic tests: PSUM tensors with block
dimensions, the implicit transpose of `nl.matmul`, and `nl.loop_reduce`."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def attention(q, k, v):
    """softmax(q.T @ k) @ v.T for q, k, v of shape (128, S): the scores of 128 queries at a
    time live in a PSUM tensor with one block per 512 keys."""
    d, seqlen = q.shape
    out = nl.ndarray((seqlen, d), dtype=q.dtype, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    v_sb = nl.load(v)
    nkv = seqlen // 512
    for iq in nl.affine_range(seqlen // 128):
        scores = nl.ndarray((nkv, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(nkv):
            scores[j, :, :] = nisa.nc_matmul(
                q_sb[:, nl.ds(iq * 128, 128)], k_sb[:, nl.ds(j * 512, 512)]
            )
        maxes = nl.ndarray((nl.par_dim(128), nkv), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(nkv):
            maxes[:, j] = nisa.tensor_reduce(op=nl.max, data=scores[j], axis=1)
        neg_max = nisa.tensor_reduce(op=nl.max, data=maxes, axis=1, negate=True)
        probs = nl.ndarray((nl.par_dim(128), seqlen), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(nkv):
            probs[:, nl.ds(j * 512, 512)] = nisa.activation(op=nl.exp, data=scores[j], bias=neg_max)
        total = nl.sum(probs, axis=1)
        acc = nl.zeros((128, d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(seqlen // 128):
            # probs[:, block] @ v[:, block].T, both transposed by nl.matmul itself
            v_t = nl.transpose(v_sb[:, nl.ds(j * 128, 128)])
            acc += nl.matmul(probs[:, nl.ds(j * 128, 128)], v_t)
        res = nl.divide(acc, total)
        nl.store(out[nl.ds(iq * 128, 128), :], value=res)
    return out


@nki.jit
def matmul_no_transpose(x, y):
    """x @ y for x (128, 128) and y (128, 512): nl.matmul transposes x itself."""
    out = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.matmul(nl.load(x), nl.load(y))
    nl.store(out, value=res)
    return out


@nki.jit
def drained_blocks(a, b):
    """16 blocks of 2 KiB in PSUM (twice PSUM's size), each written and read back at once."""
    out = nl.ndarray((16, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.load(a)
    acc = nl.ndarray((16, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(16):
        acc[i] = nisa.nc_matmul(a_sb, nl.load(b[i]))
        nl.store(out[i], value=acc[i])
    return out


@nki.jit
def all_blocks_live(a, b, c):
    """9 blocks of 2 KiB in PSUM all written before any is read, each read together with a
    tile loaded only after the last one is written: more than 8 banks live at once."""
    out = nl.ndarray((9, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.load(a)
    acc = nl.ndarray((9, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(9):
        acc[i] = nisa.nc_matmul(a_sb, nl.load(b[i]))
    c_sb = nl.load(c)
    for i in nl.affine_range(9):
        nl.store(out[i], value=nl.add(acc[i], c_sb))
    return out


@nki.jit
def loop_reduced(a, b):
    """sum over i of a.T @ b[i], each product reduced into an SBUF tile with nl.loop_reduce,
    and the column maxima of the products reduced into `top` by name."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    top_out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.load(a)
    total = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    total[1] = 0.0
    top = nl.full((128, 512), -1e30, dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(b.shape[0]):
        prod = nisa.nc_matmul(a_sb, nl.load(b[i]))
        total[1] = nl.loop_reduce(prod, np.add, loop_indices=[i])
        top = nl.loop_reduce(prod, nl.maximum, loop_indices=[i], dtype=nl.float32)
    nl.store(out, value=total[1])
    nl.store(top_out, value=top)
    return out, top_out


@nki.jit
def kept_result(a):
    """A returned tile that is named is still written (only a bare call writes its target)."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    twice = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.activation(op=nl.exp, data=nl.load(a))
    t[...] = y
    t[...] = nisa.activation(op=nl.exp, data=t)
    nl.store(out, value=t)
    nl.store(twice, value=y * 2.0)
    return out, twice


@nki.jit
def staged_softmax(q, k):
    """Row softmax of q.T @ k in stages, as a first attention kernel does: every score block
    into one PSUM block tensor, then the row maxima over all blocks, then each block minus its
    row maximum, exponentiated. At S = 1024 the 8 x 2 score blocks of 2 KiB are twice the PSUM,
    and each is read again after every block of its row is written."""
    d, seqlen = q.shape
    nq = seqlen // 128
    nkv = seqlen // 512
    out = nl.ndarray((nq, 128, seqlen), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    scores = nl.ndarray((nq, nkv, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(nq):
        for j in nl.affine_range(nkv):
            scores[i, j, :, :] = nisa.nc_matmul(
                stationary=q_sb[:, nl.ds(i * 128, 128)], moving=k_sb[:, nl.ds(j * 512, 512)]
            )
    row_max = nl.ndarray((nl.par_dim(128), nq, 1), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(nq):
        block_max = nl.ndarray((nl.par_dim(128), nkv), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(nkv):
            block_max[:, j] = nisa.tensor_reduce(op=nl.max, data=scores[i, j], axis=1)
        row_max[:, i, :] = nisa.tensor_reduce(op=nl.max, data=block_max, axis=1)
    for i in nl.affine_range(nq):
        row = nl.ndarray((nl.par_dim(128), seqlen), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(nkv):
            row[:, nl.ds(j * 512, 512)] = nisa.activation(
                op=nl.exp, data=scores[i, j], bias=nl.negative(row_max[:, i, :])
            )
        nl.store(out[i], value=row)
    return out
