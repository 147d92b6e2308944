"""affine_range loops that the frontend unrolls (the body uses the loop variable at compile
time), with and without races between their iterations."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def same_block(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        nisa.memset(dst=t, value=i * 1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def own_blocks(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        if i == 0:
            nisa.memset(dst=t[:, 0:128], value=0.0)
        else:
            nisa.memset(dst=t[:, i * 128 : (i + 1) * 128], value=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def shared_reads_and_accumulation(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=lhsT)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(4):
        r = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
        if k % 2 == 0:
            nisa.dma_copy(dst=r, src=rhs[k * 128 : (k + 1) * 128, :])
        else:
            nisa.tensor_copy(dst=r, src=w[:, 0:1].broadcast(1, 512))
        nisa.nc_matmul(dst=acc, stationary=w, moving=r)
    o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=acc)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def reads_a_neighbour(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 640), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        nisa.memset(dst=t[:, i * 128 : (i + 1) * 128], value=i * 1.0)
        nisa.dma_copy(dst=out[:, i * 128 : (i + 1) * 128], src=t[:, i * 128 + 64 : i * 128 + 192])
    return out


@nki.jit
def inside_a_symbolic_loop(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    for o in nl.affine_range(4):
        t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(2):
            nisa.memset(dst=t, value=i * 1.0)
        nisa.dma_copy(dst=out[:, o * 128 : (o + 1) * 128], src=t)
    return out
