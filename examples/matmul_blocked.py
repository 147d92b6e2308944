"""Tiled matmul blocked along the free dimensions M and N.

result[M, N] = lhsT[K, M].T @ rhs[K, N]. For each block of TILES_M column tiles of lhsT, all K
tiles are loaded once; for each block of TILES_N column tiles of rhs, all K tiles are loaded
once and serve TILES_M x TILES_N output tiles, so each byte loaded from HBM feeds more matmuls
than in matmul_hoisted.py. As in the published tutorial kernel (`nki_matmul_block_free_
dimension_`), the tiles are loaded one [128, 128] / [128, 512] tile per transfer.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_blocked(lhsT, rhs, TILES_M=2, TILES_N=2):
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
        # TILES_M column tiles of lhsT, every K tile of each
        lhsT_tiles = nl.ndarray((TILE_K, TILES_M, KT, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in range(TILES_M):
            for k in range(KT):
                col = (m * TILES_M + bm) * TILE_M
                nisa.dma_copy(
                    dst=lhsT_tiles[:, bm, k, :],
                    src=lhsT[k * TILE_K : (k + 1) * TILE_K, col : col + TILE_M],
                )
        for n in range(N // BLOCK_N):
            # TILES_N column tiles of rhs, every K tile of each
            rhs_tiles = nl.ndarray((TILE_K, TILES_N, KT, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in range(TILES_N):
                for k in range(KT):
                    col = (n * TILES_N + bn) * TILE_N
                    nisa.dma_copy(
                        dst=rhs_tiles[:, bn, k, :],
                        src=rhs[k * TILE_K : (k + 1) * TILE_K, col : col + TILE_N],
                    )
            for bm in range(TILES_M):
                for bn in range(TILES_N):
                    acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in range(KT):
                        nisa.nc_matmul(
                            dst=acc,
                            stationary=lhsT_tiles[:, bm, k, :],
                            moving=rhs_tiles[:, bn, k, :],
                        )
                    out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out_tile, src=acc)
                    row = (m * TILES_M + bm) * TILE_M
                    col = (n * TILES_N + bn) * TILE_N
                    nisa.dma_copy(dst=result[row : row + TILE_M, col : col + TILE_N], src=out_tile)
    return result
