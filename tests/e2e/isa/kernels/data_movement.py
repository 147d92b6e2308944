"""Data movement: dma_copy access patterns and casts, dma_transpose, tensor_copy engines,
memset, through on-chip round trips."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dma_partition_broadcast(a, P=8):
    # HBM row (1, F) read with a partition step of 0: every partition gets the same row
    _, F = a.shape
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[0, P], [1, F]]))
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def dma_strided(a):
    # HBM (R, C) gathered column-major with a 3-D free pattern: t[c, h, r2] = a[2*r2 + h, c]
    R, C = a.shape
    t = nl.ndarray((C, 2, R // 2), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[1, C], [C, 2], [2 * C, R // 2]]))
    out = nl.ndarray((C, 2, R // 2), dtype=a.dtype, buffer=nl.shared_hbm)
    # store through an SBUF-side pattern that reverses nothing but starts at partition 32
    u = nl.ndarray((32 + C, 2, R // 2), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u[32 : 32 + C], src=t)
    nisa.dma_copy(dst=out, src=u[32 : 32 + C])
    return out


@nki.jit
def dma_cast(a, mid, odt):
    # HBM a -> SBUF (cast to mid) -> HBM (cast to odt); also HBM->HBM reshape copy of a
    P, F = a.shape
    t = nl.ndarray((P, F), dtype=mid, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    out = nl.ndarray((P, F), dtype=odt, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    flat = nl.ndarray((P * F // 2, 2), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=flat, src=a)
    return out, flat


@nki.jit
def dma_modes(a, dge="unknown", engine="unknown", oob="error"):
    P, F = a.shape
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(
        dst=t,
        src=a,
        dge_mode=getattr(nisa.dge_mode, dge),
        engine=getattr(nisa.engine, engine),
        oob_mode=getattr(nisa.oob_mode, oob),
    )
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def dma_transpose(a, on_chip=False, axes=None):
    shape = a.shape
    if len(shape) == 2:
        perm = (1, 0)
    elif len(shape) == 3:
        perm = (2, 1, 0)
    else:
        perm = (3, 1, 2, 0)
    oshape = tuple(shape[i] for i in perm)
    src = a
    if on_chip:
        src = nl.ndarray(shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
    t = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.sbuf)
    if axes is None:
        nisa.dma_transpose(dst=t, src=src)
    else:
        nisa.dma_transpose(dst=t, src=src, axes=axes)
    out = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def dma_compute(a, b, c, on_chip=False, scales=None):
    P, F = a.shape
    srcs = [a, b, c]
    if on_chip:
        srcs = []
        for x in (a, b, c):
            t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            srcs.append(t)
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    if scales is None:
        nisa.dma_compute(dst=out, srcs=srcs, reduce_op=nl.add)
    else:
        nisa.dma_compute(dst=out, srcs=srcs, reduce_op=nl.add, scales=scales)
    return out


@nki.jit
def memset(P=4, F=6, dtype="float32", value=0.0, engine="unknown", p0=0):
    t = nl.ndarray((p0 + P, F), dtype=dtype, buffer=nl.sbuf)
    nisa.memset(dst=t[p0 : p0 + P], value=value, engine=getattr(nisa.engine, engine))
    out = nl.ndarray((P, F), dtype=dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t[p0 : p0 + P])
    return out


@nki.jit
def memset_psum(P=4, F=6, value=1.5):
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=t, value=value, engine=nisa.engine.vector)
    s = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=t)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def cast_round_trip(a, mid="float8_e4m3", engine="vector"):
    """fp32 -> `mid` -> fp32 with two on-chip tensor_copy casts."""
    P, F = a.shape
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    m = nl.ndarray((P, F), dtype=mid, buffer=nl.sbuf)
    nisa.tensor_copy(dst=m, src=t, engine=getattr(nisa.engine, engine))
    back = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back, src=m, engine=getattr(nisa.engine, engine))
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=back)
    return out


@nki.jit
def compute_through_ap(a, b):
    """tensor_tensor reading SBUF through raw access patterns: every other element of `a`'s
    tile, and `b`'s tile with the free elements reversed (negative step); 3-D output view."""
    P, F = a.shape
    ta = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray((P, F // 2), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    h = F // 2
    o = nl.ndarray((P, 2, h // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(
        dst=o,
        data1=ta.ap([[F, P], [2 * (h // 2), 2], [2, h // 2]], offset=1),
        data2=tb.ap([[h, P], [-(h // 2), 2], [-1, h // 2]], offset=h - 1),
        op=nl.subtract,
    )
    out = nl.ndarray((P, 2, h // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def dma_sbuf_to_sbuf_shift(a, shift=3):
    """DMA reaches any partition: SBUF -> SBUF moving rows down by `shift` partitions."""
    P, F = a.shape
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((P + shift, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u[shift : shift + P], src=t)
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u[shift : shift + P])
    return out
