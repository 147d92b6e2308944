"""examples/tiled_add.py, matmul_tiled.py and matmul_row_loads.py spelt with `nl.affine_range`,
the loops nkic keeps symbolic (one IR loop each), for the tests of what a kept loop gives:
`for $` in the IR, loops named as in the source, iterations in messages, static and executed
instruction counts. (The examples use `range`, NKI 0.7's spelling, and unroll.)"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tiled_add(a, b):
    N, F = a.shape
    TILE = nl.tile_size.pmax
    assert N % TILE == 0, "rows must be a multiple of 128"
    c = nl.ndarray((N, F), dtype=a.dtype, buffer=nl.shared_hbm)

    for i in nl.affine_range(N // TILE):
        rows = slice(i * TILE, (i + 1) * TILE)
        a_tile = nl.ndarray((TILE, F), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((TILE, F), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rows, :])
        nisa.dma_copy(dst=b_tile, src=b[rows, :])

        c_tile = nl.ndarray((TILE, F), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=c[rows, :], src=c_tile)
    return c


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

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
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

    for m in nl.affine_range(M // BLOCK_M):
        # one [128, BLOCK_M] row of lhsT per K tile
        lhsT_rows = nl.ndarray((TILE_K, KT, BLOCK_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(
                dst=lhsT_rows[:, k, :],
                src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * BLOCK_M : (m + 1) * BLOCK_M],
            )
        for n in nl.affine_range(N // BLOCK_N):
            # one [128, BLOCK_N] row of rhs per K tile
            rhs_rows = nl.ndarray((TILE_K, KT, BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                nisa.dma_copy(
                    dst=rhs_rows[:, k, :],
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * BLOCK_N : (n + 1) * BLOCK_N],
                )
            for bm in nl.affine_range(TILES_M):
                for bn in nl.affine_range(TILES_N):
                    acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
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
