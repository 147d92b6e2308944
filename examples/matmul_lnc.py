"""result[M, N] = lhsT[K, M].T @ rhs[K, N] on every core of an LNC launch: each physical core
computes its own block of rows of the result (`nl.program_id()` picks it), so at LNC=2 the
two cores share the work and write disjoint halves of the shared output.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_lnc(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"
    TILE_K, TILE_M, TILE_N = 128, 128, 512
    cores = nl.num_programs()
    core = nl.program_id()
    assert M % (TILE_M * cores) == 0 and K % TILE_K == 0 and N % TILE_N == 0
    rows = M // cores  # this core's rows of the result

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(rows // TILE_M):
        m0 = core * rows + m * TILE_M
        for n in range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=lhsT_tile, src=lhsT[k * TILE_K : (k + 1) * TILE_K, m0 : m0 + TILE_M]
                )
                nisa.dma_copy(
                    dst=rhs_tile,
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N],
                )
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)
            out_tile = nl.ndarray((TILE_M, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(dst=result[m0 : m0 + TILE_M, n * TILE_N : (n + 1) * TILE_N], src=out_tile)
    return result
