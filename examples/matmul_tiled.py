"""result[M, N] = lhsT[K, M].T @ rhs[K, N], tiled, accumulating over K in PSUM.

The contraction dimension K is the partition dimension of both operands. Each output tile
[128, 512] lives in one PSUM bank; the K loop accumulates into it (the first matmul of the
group overwrites, the later ones add), then the tile is copied to SBUF and stored.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"

    TILE_K = nl.tile_size.pmax  # 128: contraction, on partitions
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512
    assert K % TILE_K == 0 and M % TILE_M == 0 and N % TILE_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for m in range(M // TILE_M):
        for n in range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=lhsT_tile,
                    src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * TILE_M : (m + 1) * TILE_M],
                )
                nisa.dma_copy(
                    dst=rhs_tile,
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N],
                )
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)

            out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M : (m + 1) * TILE_M, n * TILE_N : (n + 1) * TILE_N],
                src=out_tile,
            )
    return result
