"""Tensor engine: nc_matmul accumulation groups and options, nc_transpose."""

import nki
import nki.isa as nisa
import nki.language as nl


def _load(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _out(p, dtype=nl.float32):
    s = nl.ndarray(p.shape, dtype=p.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=p, engine=nisa.engine.vector)
    out = nl.ndarray(p.shape, dtype=p.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def matmul_group(st, mv, chunks=2, flags=(None, None), dst_dtype="float32"):
    """One accumulation group: K split in `chunks` matmuls with the given accumulate flags."""
    K, M = st.shape
    _, N = mv.shape
    s = _load(st)
    m = _load(mv)
    p = nl.ndarray((M, N), dtype=dst_dtype, buffer=nl.psum)
    kc = K // chunks
    for i in range(chunks):
        nisa.nc_matmul(
            dst=p, stationary=s[i * kc : (i + 1) * kc], moving=m[i * kc : (i + 1) * kc],
            accumulate=flags[i],
        )
    return _out(p)


@nki.jit
def matmul_loop(st, mv, chunks=4):
    """An accumulation group in a (symbolic) affine loop: accumulate=None infers overwrite
    on the first iteration and accumulate on the later ones."""
    K, M = st.shape
    _, N = mv.shape
    kc = K // chunks
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(chunks):
        s = nl.ndarray((kc, M), dtype=st.dtype, buffer=nl.sbuf)
        m = nl.ndarray((kc, N), dtype=mv.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=st[i * kc : (i + 1) * kc])
        nisa.dma_copy(dst=m, src=mv[i * kc : (i + 1) * kc])
        nisa.nc_matmul(dst=p, stationary=s, moving=m)
    return _out(p)


@nki.jit
def matmul_two_groups(st, mv):
    """Two interleaved accumulation groups in two PSUM tiles; the second reuses the first's
    inputs in the opposite order."""
    K, M = st.shape
    _, N = mv.shape
    s = _load(st)
    m = _load(mv)
    h = K // 2
    p0 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    p1 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p0, stationary=s[0:h], moving=m[0:h], accumulate=False)
    nisa.nc_matmul(dst=p1, stationary=s[h:K], moving=m[h:K], accumulate=False)
    nisa.nc_matmul(dst=p0, stationary=s[h:K], moving=m[h:K], accumulate=True)
    nisa.nc_matmul(dst=p1, stationary=s[0:h], moving=m[0:h], accumulate=True)
    return _out(p0), _out(p1)


@nki.jit
def matmul_tiled_pe(st, mv, tile_position=(), tile_size=(), p0=0):
    K, M = st.shape
    _, N = mv.shape
    sfull = nl.ndarray((p0 + K, M), dtype=st.dtype, buffer=nl.sbuf)
    mfull = nl.ndarray((p0 + K, N), dtype=mv.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=sfull[p0 : p0 + K], src=st)
    nisa.dma_copy(dst=mfull[p0 : p0 + K], src=mv)
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(
        dst=p, stationary=sfull[p0 : p0 + K], moving=mfull[p0 : p0 + K],
        tile_position=tile_position, tile_size=tile_size,
    )
    return _out(p)


@nki.jit
def matmul_row_tiles(st, mv):
    """K=128 split over the two 64-row PE tiles; both matmuls target the same PSUM tile, the
    second accumulates (accumulate=None infers it)."""
    K, M = st.shape
    _, N = mv.shape
    s = _load(st)
    m = _load(mv)
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=s[0:64], moving=m[0:64], tile_position=(0, 0), tile_size=(64, 128))
    nisa.nc_matmul(dst=p, stationary=s[64:128], moving=m[64:128], tile_position=(64, 0), tile_size=(64, 128))
    return _out(p)


@nki.jit
def matmul_column_blocks(st, mv, blocks=4):
    """Each block of N is its own first write (overwrite) inside one PSUM tile, in a loop;
    then every block is accumulated once more from the same inputs."""
    K, M = st.shape
    _, N = mv.shape
    s = _load(st)
    m = _load(mv)
    nb = N // blocks
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(blocks):
        nisa.nc_matmul(dst=p[:, j * nb : (j + 1) * nb], stationary=s, moving=m[:, j * nb : (j + 1) * nb])
    for j in nl.affine_range(blocks):
        nisa.nc_matmul(dst=p[:, j * nb : (j + 1) * nb], stationary=s, moving=m[:, j * nb : (j + 1) * nb])
    return _out(p)


@nki.jit
def matmul_reuse_psum_tile(st, mv, rounds=3, inside=False):
    """`rounds` pairs of accumulate=None matmuls, each copied out. With the PSUM tile allocated
    outside the loop, only the very first write overwrites (NKI 0.3.0: first write within the
    allocation's lifetime); allocated inside, every iteration starts a fresh group."""
    K, M = st.shape
    _, N = mv.shape
    s = _load(st)
    m = _load(mv)
    out = nl.ndarray((rounds, M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for r in nl.sequential_range(rounds):
        if inside:
            p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=s, moving=m)
        nisa.nc_matmul(dst=p, stationary=s, moving=m)
        o = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=p)
        nisa.dma_copy(dst=out[r], src=o)
    return out


@nki.jit
def matmul_cast_inputs(st, mv, dtype="float8_e4m3", double_row=False):
    """Inputs cast on chip (Vector tensor_copy) to `dtype` before the matmul."""
    s32, m32 = _load(st), _load(mv)
    s = nl.ndarray(st.shape, dtype=dtype, buffer=nl.sbuf)
    m = nl.ndarray(mv.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=s32)
    nisa.tensor_copy(dst=m, src=m32)
    p = nl.ndarray((st.shape[-1], mv.shape[-1]), dtype=nl.float32, buffer=nl.psum)
    if double_row:
        nisa.nc_matmul(dst=p, stationary=s, moving=m, perf_mode=nisa.matmul_perf_mode.double_row)
    else:
        nisa.nc_matmul(dst=p, stationary=s, moving=m)
    return _out(p)
