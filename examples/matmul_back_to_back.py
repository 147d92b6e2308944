"""Back-to-back matmuls on one resident tile pair: TensorE at its peak rate.

Loads one [128, 128] stationary and one [128, 512] moving tile once, then issues REPEAT
nc_matmuls on them, accumulating into one PSUM bank: result = REPEAT · stationary.T @ moving.
Nothing but TensorE works between the first load and the final copy, so the run measures how
close back-to-back matmuls come to 128·128·2 FLOP per cycle.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_back_to_back(stationary, moving, REPEAT=2048):
    K, M = stationary.shape
    K_, N = moving.shape
    assert K == K_, "stationary and moving must share the contraction dimension"
    assert K <= nl.tile_size.pmax and M <= nl.tile_size.gemm_stationary_fmax
    assert N <= nl.tile_size.gemm_moving_fmax

    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    s_tile = nl.ndarray((K, M), dtype=stationary.dtype, buffer=nl.sbuf)
    m_tile = nl.ndarray((K, N), dtype=moving.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s_tile, src=stationary)
    nisa.dma_copy(dst=m_tile, src=moving)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for _ in range(REPEAT):
        nisa.nc_matmul(dst=acc, stationary=s_tile, moving=m_tile)
    out_tile = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out_tile, src=acc)
    nisa.dma_copy(dst=result, src=out_tile)
    return result
