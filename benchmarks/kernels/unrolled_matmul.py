"""A tiled matmul whose loops are all `nl.static_range`: the compiler unrolls every
iteration, so the instruction count grows with the shape (compile-time scaling benchmark)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def unrolled_matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.static_range(M // 128):
        for n in nl.static_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.static_range(K // 128):
                lhsT_tile = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=lhsT_tile, src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128]
                )
                nisa.dma_copy(
                    dst=rhs_tile, src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512]
                )
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)
            out_tile = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(
                dst=result[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=out_tile
            )
    return result
