"""Tiled matmul with the loads hoisted out of the K loop.

result[M, N] = lhsT[K, M].T @ rhs[K, N]. For each 128-column stripe of lhsT all K tiles are
loaded once and reused for every N tile; for each N tile all K tiles of rhs are loaded once.
Compared with matmul_tiled.py this removes the reload of the lhsT tiles for every N tile.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"
    TILE_K = nl.tile_size.pmax
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    KT = K // TILE_K
    assert K % TILE_K == 0 and M % TILE_M == 0 and N % TILE_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for m in range(M // TILE_M):
        lhsT_tiles = nl.ndarray((TILE_K, KT, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_copy(
                dst=lhsT_tiles[:, k, :],
                src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * TILE_M : (m + 1) * TILE_M],
            )
        for n in range(N // TILE_N):
            rhs_tiles = nl.ndarray((TILE_K, KT, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(KT):
                nisa.dma_copy(
                    dst=rhs_tiles[:, k, :],
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N],
                )
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in range(KT):
                nisa.nc_matmul(dst=acc, stationary=lhsT_tiles[:, k, :], moving=rhs_tiles[:, k, :])
            out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M : (m + 1) * TILE_M, n * TILE_N : (n + 1) * TILE_N],
                src=out_tile,
            )
    return result
