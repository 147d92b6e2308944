"""examples/matmul_tiled.py with its loops written `nl.affine_range`, which nkic keeps as
symbolic IR loops (a `range` loop unrolls, as the official compiler unrolls it): the IR and the
compile time do not depend on the trip counts. NKI 0.7 deprecates `nl.affine_range` (plain
`range` there), so the benchmarks compile this kernel as NKI 0.6, where it is current."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kept_matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
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
