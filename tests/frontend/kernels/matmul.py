"""Tiled matmul: three nested affine_range loops that stay symbolic."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_kernel(a, b):
    K, M = a.shape
    K2, N = b.shape
    assert K == K2, "contraction mismatch"
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    TM = nl.tile_size.gemm_stationary_fmax
    TN = nl.tile_size.gemm_moving_fmax
    TK = nl.tile_size.pmax
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                at = nl.ndarray((TK, TM), dtype=a.dtype, buffer=nl.sbuf)
                bt = nl.ndarray((TK, TN), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=at, src=a[k * TK : (k + 1) * TK, m * TM : (m + 1) * TM])
                nisa.dma_copy(dst=bt, src=b[k * TK : (k + 1) * TK, nl.ds(n * TN, TN)])
                nisa.nc_matmul(acc, at, bt)
            res = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * TM : (m + 1) * TM, n * TN : (n + 1) * TN], src=res)
    return out
