"""trn3 MX instructions: quantize_mx and nc_matmul_mx (packed x4 data travel as uint words)."""

import nki
import nki.isa as nisa
import nki.language as nl


def _store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def quantize(x, dtype="float8_e4m3fn_x4", scale_dtype="uint8"):
    P, F = x.shape
    src = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=x)
    q = nl.ndarray((P, F // 4), dtype=dtype, buffer=nl.sbuf)
    srows = P // 8 if P <= 32 else P
    s = nl.ndarray((srows, F // 4), dtype=scale_dtype, buffer=nl.sbuf)
    nisa.memset(dst=s, value=0)
    nisa.quantize_mx(dst=q, src=src, dst_scale=s)
    return _store(q.view(nl.uint32)), _store(s)


@nki.jit
def matmul_mx(st, mv, st_scale, mv_scale, st_dtype="float8_e4m3fn_x4", mv_dtype="float8_e4m3fn_x4"):
    K, M = st.shape
    _, N = mv.shape
    ts = nl.ndarray((K, M), dtype=st.dtype, buffer=nl.sbuf)
    tm = nl.ndarray((K, N), dtype=mv.dtype, buffer=nl.sbuf)
    ss = nl.ndarray(st_scale.shape, dtype=st_scale.dtype, buffer=nl.sbuf)
    ms = nl.ndarray(mv_scale.shape, dtype=mv_scale.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=st)
    nisa.dma_copy(dst=tm, src=mv)
    nisa.dma_copy(dst=ss, src=st_scale)
    nisa.dma_copy(dst=ms, src=mv_scale)
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(
        dst=p, stationary=ts.view(st_dtype), moving=tm.view(mv_dtype),
        stationary_scale=ss, moving_scale=ms,
    )
    o = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p)
    return _store(o)
