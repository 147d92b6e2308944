"""Kernels whose relative speed the NKI docs state: hoisted loads, bigger transfers, blocking.

Every kernel computes out[128, N] = w[128, 128].T @ x[128, N] over `N // TILE` tiles of x.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def weights_reloaded(w, x, TILE=2048):
    """Loads the weight tile again for every tile of x (the tutorial's 'tiled' kernel)."""
    K, N = x.shape
    out = nl.ndarray((K, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // TILE):
        w_tile = nl.ndarray((K, K), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w_tile, src=w)
        x_tile = nl.ndarray((K, TILE), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[:, t * TILE : (t + 1) * TILE])
        o_tile = nl.ndarray((K, TILE), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(TILE // 512):
            acc = nl.ndarray((K, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=w_tile, moving=x_tile[:, j * 512 : (j + 1) * 512])
            nisa.tensor_copy(dst=o_tile[:, j * 512 : (j + 1) * 512], src=acc)
        nisa.dma_copy(dst=out[:, t * TILE : (t + 1) * TILE], src=o_tile)
    return out


@nki.jit
def weights_hoisted(w, x, TILE=2048):
    """Loads the weight tile once, outside the loop (the tutorial's 'hoisted loads')."""
    K, N = x.shape
    out = nl.ndarray((K, N), dtype=nl.float32, buffer=nl.shared_hbm)
    w_tile = nl.ndarray((K, K), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_tile, src=w)
    for t in nl.affine_range(N // TILE):
        x_tile = nl.ndarray((K, TILE), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[:, t * TILE : (t + 1) * TILE])
        o_tile = nl.ndarray((K, TILE), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(TILE // 512):
            acc = nl.ndarray((K, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=w_tile, moving=x_tile[:, j * 512 : (j + 1) * 512])
            nisa.tensor_copy(dst=o_tile[:, j * 512 : (j + 1) * 512], src=acc)
        nisa.dma_copy(dst=out[:, t * TILE : (t + 1) * TILE], src=o_tile)
    return out


@nki.jit
def copy_in_chunks(x, CHUNK=512):
    """Copies x [128, N] HBM -> SBUF -> HBM in transfers of CHUNK elements per partition."""
    P, N = x.shape
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(N // CHUNK):
        tile = nl.ndarray((P, CHUNK), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, t * CHUNK : (t + 1) * CHUNK])
        nisa.dma_copy(dst=out[:, t * CHUNK : (t + 1) * CHUNK], src=tile)
    return out
