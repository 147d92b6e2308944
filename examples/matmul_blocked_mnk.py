"""Tiled matmul blocked along M, N and K, with partial sums kept in SBUF.

result[M, N] = lhsT[K, M].T @ rhs[K, N]. For each N block, the K dimension is walked in blocks
of TILES_K tiles: a K block of rhs is loaded once and reused for every M block; each output
tile accumulates TILES_K matmuls in PSUM, and the Vector engine adds that partial sum into an
accumulator in SBUF (fp32 by default; SUMS_DTYPE=nl.bfloat16 is what the published tutorial
kernel does: its `result_tiles` have `dtype=lhsT.dtype`). Only after the last K block is the
result rounded and stored.

The accumulator is allocated once and zeroed for every N block (the N blocks run in order),
so that the SBUF left over goes to multi-buffering the rhs and lhsT K blocks, which lets their
loads overlap the matmuls. With fp32 sums of a 4096-row M the accumulator alone takes 128 KiB
of the 176 KiB per partition on trn1, and the K blocks are single-buffered.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_blocked_mnk(lhsT, rhs, TILES_M=16, TILES_N=2, TILES_K=8, SUMS_DTYPE=nl.float32):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"
    TILE_K = nl.tile_size.pmax
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    BLOCK_M = TILE_M * TILES_M
    BLOCK_N = TILE_N * TILES_N
    BLOCK_K = TILE_K * TILES_K
    NUM_BLOCK_M = M // BLOCK_M
    assert M % BLOCK_M == 0 and N % BLOCK_N == 0 and K % BLOCK_K == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    # one partial-sum tile per (M tile, N tile) of an N block, reused by every N block
    sums = nl.ndarray(
        (TILE_M, NUM_BLOCK_M * TILES_M * TILES_N, TILE_N), dtype=SUMS_DTYPE, buffer=nl.sbuf
    )
    for n in range(N // BLOCK_N):
        nisa.memset(dst=sums, value=0.0)
        for kb in range(K // BLOCK_K):
            rhs_block = nl.ndarray((TILE_K, TILES_K, BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in range(TILES_K):
                k0 = kb * BLOCK_K + bk * TILE_K
                nisa.dma_copy(
                    dst=rhs_block[:, bk, :],
                    src=rhs[k0 : k0 + TILE_K, n * BLOCK_N : (n + 1) * BLOCK_N],
                )
            for m in range(NUM_BLOCK_M):
                lhsT_block = nl.ndarray(
                    (TILE_K, TILES_K, BLOCK_M), dtype=lhsT.dtype, buffer=nl.sbuf
                )
                for bk in range(TILES_K):
                    k0 = kb * BLOCK_K + bk * TILE_K
                    nisa.dma_copy(
                        dst=lhsT_block[:, bk, :],
                        src=lhsT[k0 : k0 + TILE_K, m * BLOCK_M : (m + 1) * BLOCK_M],
                    )
                for bn in range(TILES_N):
                    for bm in range(TILES_M):
                        acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                        for bk in range(TILES_K):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=lhsT_block[:, bk, bm * TILE_M : (bm + 1) * TILE_M],
                                moving=rhs_block[:, bk, bn * TILE_N : (bn + 1) * TILE_N],
                            )
                        t = (m * TILES_M + bm) * TILES_N + bn
                        nisa.tensor_tensor(
                            dst=sums[:, t, :], data1=sums[:, t, :], data2=acc, op=nl.add
                        )

        for m in range(NUM_BLOCK_M):
            for bm in range(TILES_M):
                for bn in range(TILES_N):
                    t = (m * TILES_M + bm) * TILES_N + bn
                    out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out_tile, src=sums[:, t, :])
                    row = m * BLOCK_M + bm * TILE_M
                    col = n * BLOCK_N + bn * TILE_N
                    nisa.dma_copy(dst=result[row : row + TILE_M, col : col + TILE_N], src=out_tile)
    return result
