import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def fails_at_iteration(x, LIMIT=3):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        assert i < LIMIT, f"tile {i} is past the limit"
        t = nl.ndarray((P, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, i * 128 : (i + 1) * 128])
        nisa.dma_copy(dst=out[:, i * 128 : (i + 1) * 128], src=t)
    return out


@nki.jit
def guard_in_loop(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        assert F % 128 == 0
        t = nl.ndarray((P, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, i * 128 : (i + 1) * 128])
        nisa.dma_copy(dst=out[:, i * 128 : (i + 1) * 128], src=t)
    return out
