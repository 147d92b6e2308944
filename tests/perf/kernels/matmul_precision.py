"""The same contraction at different TensorE precisions (Hardware §4): fp32 at a quarter of the
bf16 rate, and FP8 `double_row` (trn2+) contracting two K rows per partition at the bf16 rate.
The product is accumulated REPEAT times into one PSUM tile so that TensorE time dominates."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_k256(lhsT, rhs, REPEAT=32):
    """out[128, N] = REPEAT * lhsT[256, 128].T @ rhs[256, N], two K tiles per product."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs_tiles = nl.ndarray((128, K // 128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_tiles = nl.ndarray((128, K // 128, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // 128):
        nisa.dma_copy(dst=lhs_tiles[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
        nisa.dma_copy(dst=rhs_tiles[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for _r in nl.affine_range(REPEAT):
        for k in nl.affine_range(K // 128):
            nisa.nc_matmul(dst=acc, stationary=lhs_tiles[:, k, :], moving=rhs_tiles[:, k, :])
    o_tile = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o_tile, src=acc)
    nisa.dma_copy(dst=out, src=o_tile)
    return out


@nki.jit
def matmul_k256_double_row(lhsT, rhs, REPEAT=32):
    """The same contraction with [128, 2, ·] FP8 operands, one double_row matmul per product."""
    P, TWO, M = lhsT.shape
    _, _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs_tile = nl.ndarray((P, TWO, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_tile = nl.ndarray((P, TWO, N), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lhs_tile, src=lhsT)
    nisa.dma_copy(dst=rhs_tile, src=rhs)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for _r in nl.affine_range(REPEAT):
        nisa.nc_matmul(
            dst=acc,
            stationary=lhs_tile,
            moving=rhs_tile,
            perf_mode=nisa.matmul_perf_mode.double_row,
        )
    o_tile = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o_tile, src=acc)
    nisa.dma_copy(dst=out, src=o_tile)
    return out
