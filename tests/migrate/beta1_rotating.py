"""Beta 1 kernels written for the nkic migrate tests: block tensors whose blocks rotate over a
few physical tiles (in PSUM, or placed by a rotating direct allocation), so that folding the
blocks into a free dimension, every block alive at once, would not fit."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

psum_mod = nki.compiler.psum.mod_alloc


@nki.jit
def products_per_block(lhsT, rhs):
    # one PSUM bank per block, twice as many blocks as PSUM has banks: each block is read
    # in the iteration that wrote it
    K, M = lhsT.shape
    n = rhs.shape[1] // 512
    out = nl.ndarray((M, n * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.load(lhsT)
    prod = nl.ndarray((n, nl.par_dim(M), 512), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(n):
        m = nl.load(rhs[0:K, j * 512 : (j + 1) * 512])
        prod[j] = nisa.nc_matmul(s, m)
        nl.store(out[0:M, j * 512 : (j + 1) * 512], value=prod[j, :, :])
    return out


@nki.jit
def sums_in_helpers(lhsT, rhs):
    # two block dimensions placed by a PSUM allocator, written and read by helper functions
    # that a sequential loop calls
    K, M = lhsT.shape
    nq = rhs.shape[1] // 512
    nk = K // 128
    out = nl.ndarray((M, nq * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    parts = nl.ndarray(
        (nq, nk, nl.par_dim(M), 512),
        dtype=nl.float32,
        buffer=psum_mod(base_bank=0, num_bank_tiles=(1, 2)),
    )
    total = nl.ndarray(
        (nq, nl.par_dim(M), 512),
        dtype=nl.float32,
        buffer=psum_mod(base_bank=2, num_bank_tiles=(2,)),
    )

    def products(j):
        for k in nl.affine_range(nk):
            s = nl.load(lhsT[k * 128 : (k + 1) * 128, 0:M])
            m = nl.load(rhs[k * 128 : (k + 1) * 128, j * 512 : (j + 1) * 512])
            parts[j, k] = nisa.nc_matmul(s, m)
            total[j, :, :] += nisa.nc_matmul(s, m)

    def combined(j):
        first = nl.copy(parts[j, 0])
        both = nl.add(first, parts[j, 1])
        diff = nl.subtract(total[j], both)
        nl.store(out[0:M, j * 512 : (j + 1) * 512], value=diff)

    for j in nl.sequential_range(nq):
        products(j)
        combined(j)
    return out


@nki.jit
def scores_then_row_max(q, k):
    # every block written by one loop nest and read by the next: all of them are alive at
    # once, more than PSUM holds, as in an unfused attention's score matrix
    d, sq = q.shape
    skv = k.shape[1]
    nq = sq // 128
    nkv = skv // 512
    out = nl.ndarray((sq, nkv), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sbuf = nl.load(q)
    k_sbuf = nl.load(k)
    qk = nl.ndarray((nq, nkv, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(nq):
        for j in nl.affine_range(nkv):
            qk[i, j, :, :] = nisa.nc_matmul(
                q_sbuf[0:d, i * 128 : (i + 1) * 128], k_sbuf[0:d, j * 512 : (j + 1) * 512]
            )
    for i in nl.affine_range(nq):
        row_max = nl.ndarray((nl.par_dim(128), nkv), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(nkv):
            row_max[:, j] = nisa.tensor_reduce(op=np.max, data=qk[i, j], axis=1)
        nl.store(out[i * 128 : (i + 1) * 128, 0:nkv], value=row_max)
    return out


@nki.jit
def rows_through_two_buffers(a):
    # SBUF blocks placed by a direct allocation that rotates over two physical tiles: all
    # of them together are larger than SBUF
    rows, cols = a.shape
    n = rows // 128
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray(
        (n, nl.par_dim(128), cols),
        dtype=a.dtype,
        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)),
    )
    for i in nl.affine_range(n):
        buf[i] = nl.load(a[i * 128 : (i + 1) * 128, 0:cols])
        y = nisa.activation(op=nl.exp, data=buf[i])
        nl.store(out[i * 128 : (i + 1) * 128, 0:cols], value=y)
    return out


@nki.jit
def row_sums_in_a_helper(a):
    # a partition grid of the kernel (its other axis named `_`, as the loop variable of a
    # list of tiles is) indexing a block of a rotating allocation in a helper function
    rows, cols = a.shape
    n = rows // 128
    w = cols // 4
    out = nl.ndarray((rows, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, _ = nl.mgrid[0:128, 0:1]
    sums = nl.ndarray(
        (n, nl.par_dim(128), 4),
        dtype=nl.float32,
        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)),
    )

    def row_sums(i):
        for j in nl.affine_range(4):
            x = nl.load(a[i * 128 : (i + 1) * 128, j * w : (j + 1) * w])
            _exps = nisa.activation_reduce(
                op=np.exp, data=x, reduce_op=np.add, reduce_res=sums[i, i_p, j]
            )
        nl.store(out[i * 128 : (i + 1) * 128, 0:4], value=sums[i])

    for i in nl.sequential_range(n):
        row_sums(i)
    return out
