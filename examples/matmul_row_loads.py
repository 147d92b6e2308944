"""Tiled matmul blocked along M and N, loading whole block rows per transfer.

result[M, N] = lhsT[K, M].T @ rhs[K, N]. Same loop structure and the same bytes as
matmul_blocked.py (lhsT loaded once per M block and reused over every N block, rhs once per
(M block, N block)), but each transfer moves one K tile of a whole block: a
[128, TILE_M·TILES_M] row of lhsT and a [128, TILE_N·TILES_N] row of rhs. With TILES_M = 8 and
TILES_N = 2 in bf16 that is 2 KiB per partition per transfer instead of 256 B / 1 KiB, the
minimum the DMA guides recommend. The matmuls slice their tiles out of the rows in SBUF.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_row_loads(lhsT, rhs, TILES_M=8, TILES_N=2):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"
    TILE_K = nl.tile_size.pmax
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    BLOCK_M = TILE_M * TILES_M
    BLOCK_N = TILE_N * TILES_N
    KT = K // TILE_K
    assert K % TILE_K == 0 and M % BLOCK_M == 0 and N % BLOCK_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for m in range(M // BLOCK_M):
        # one [128, BLOCK_M] row of lhsT per K tile
        lhsT_rows = nl.ndarray((TILE_K, KT, BLOCK_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_copy(
                dst=lhsT_rows[:, k, :],
                src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * BLOCK_M : (m + 1) * BLOCK_M],
            )
        for n in range(N // BLOCK_N):
            # one [128, BLOCK_N] row of rhs per K tile
            rhs_rows = nl.ndarray((TILE_K, KT, BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(KT):
                nisa.dma_copy(
                    dst=rhs_rows[:, k, :],
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * BLOCK_N : (n + 1) * BLOCK_N],
                )
            for bm in range(TILES_M):
                for bn in range(TILES_N):
                    acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in range(KT):
                        nisa.nc_matmul(
                            dst=acc,
                            stationary=lhsT_rows[:, k, bm * TILE_M : (bm + 1) * TILE_M],
                            moving=rhs_rows[:, k, bn * TILE_N : (bn + 1) * TILE_N],
                        )
                    out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out_tile, src=acc)
                    row = (m * TILES_M + bm) * TILE_M
                    col = (n * TILES_N + bn) * TILE_N
                    nisa.dma_copy(dst=result[row : row + TILE_M, col : col + TILE_N], src=out_tile)
    return result
