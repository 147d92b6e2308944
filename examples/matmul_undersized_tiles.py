"""Matmuls on undersized tiles: how much of TensorE's peak each tile shape leaves unused.

Loads one [128, 128] stationary and one [128, 512] moving tile once, then runs four sections of
REPEAT nc_matmuls each on slices of them: a stationary of M = 32 columns, a moving of N = 64
columns, a contraction of K = 32 partitions, and the full [128, 128] x [128, 512] shape. Each
section accumulates into its own PSUM tile; the full section's sum is the result:
result = REPEAT · stationary.T @ moving. A matmul streams its N moving columns through the
PE array whatever M and K are, so the M = 32 and K = 32 sections take as long as full ones
for a quarter of the FLOPs, and the N = 64 section is short.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_undersized_tiles(stationary, moving, REPEAT=512):
    K, M = stationary.shape
    K_, N = moving.shape
    assert (K, M, K_, N) == (128, 128, 128, 512), "a [128, 128] stationary, a [128, 512] moving"

    s_tile = nl.ndarray((K, M), dtype=stationary.dtype, buffer=nl.sbuf)
    m_tile = nl.ndarray((K, N), dtype=moving.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s_tile, src=stationary)
    nisa.dma_copy(dst=m_tile, src=moving)

    narrow_m = nl.ndarray((32, N), dtype=nl.float32, buffer=nl.psum)
    for _ in range(REPEAT):
        nisa.nc_matmul(dst=narrow_m, stationary=s_tile[:, 0:32], moving=m_tile)
    narrow_n = nl.ndarray((M, 64), dtype=nl.float32, buffer=nl.psum)
    for _ in range(REPEAT):
        nisa.nc_matmul(dst=narrow_n, stationary=s_tile, moving=m_tile[:, 0:64])
    short_k = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for _ in range(REPEAT):
        nisa.nc_matmul(dst=short_k, stationary=s_tile[0:32, :], moving=m_tile[0:32, :])
    full = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for _ in range(REPEAT):
        nisa.nc_matmul(dst=full, stationary=s_tile, moving=m_tile)

    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    out_tile = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out_tile, src=full)
    nisa.dma_copy(dst=result, src=out_tile)
    return result
