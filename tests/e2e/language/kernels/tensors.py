"""Tensors: indexing with the partition rules, view primitives, access patterns, metadata,
item assignment and nki.typing annotations."""

import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt
from common import emit


def load(src, dtype=None):
    t = nl.ndarray(src.shape, dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def store(t):
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def indexing(h):
    """h: [4, 128, 32] in HBM. Output [128, 82]: pieces of h placed by indexing."""
    B, P, F = h.shape
    t = load(h[1])  # an int on an HBM dim drops it: [128, 32]
    u = load(h[2, ...])
    out = nl.ndarray((P, 82), nl.float32, buffer=nl.sbuf)
    out[:, 0:F] = t  # item assignment copies a tile
    out[:, F : F + 16] = u[..., 16:32]
    out[:, 48:49] = t[:, 3]  # an int on a free dim drops it; the tile stays 2-D: [128, 1]
    out[:, -33:-32] = -1.0  # column 49, negative slice bounds
    out[..., 50:82] = 0.0
    out[32:33, 50:82] = t[-32]  # an int on the partition dim keeps it: [1, 32]
    row = t[5]
    col = t[:, 3]
    meta = [
        h.ndim,
        t.ndim,
        row.shape[0] * 100 + row.shape[1],
        col.shape[0] * 100 + col.shape[1],
        h.strides[0],
        h.strides[1],
        h[1].offset,
        h[2, 3].offset,
        h[:, 4:, ::2].strides[2],
        t[2:4, 8:].offset,
        h.buffer == nl.hbm,
        t.buffer == nl.sbuf,
        t.dtype == nl.float32,
        h[0, 0, 0].shape == (1,),
        t[0, 0].shape == (1, 1),
        len(h[...].shape),
    ]
    return emit(meta), store(out)


@nki.jit
def views(x):
    """x: [128, 64] float32 in HBM."""
    P, F = x.shape
    reshaped = load(x.reshape((64, 128)))
    bits = load(x.view(nl.int32))
    transposed = load(x.permute((1, 0)))
    bcast = load(x[3:4, :].broadcast(0, P))
    row5 = load(x.ap([[0, P], [1, F]], offset=5 * F))  # every partition reads row 5
    odd = load(x.ap([[F, P], [2, F // 2]], offset=1))
    pattern = x[:, 0 : F // 2].get_pattern()
    right = load(x.ap(pattern, offset=F // 2))
    t = load(x)
    on_chip = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=on_chip[:, 0 : F // 2], src=t.ap([[F, P], [1, F // 2]], offset=F // 2))
    nisa.tensor_copy(dst=on_chip[:, F // 2 : F], src=t[:, 0 : F // 2])
    meta = [pattern[0][0], pattern[0][1], pattern[1][0], pattern[1][1], len(t.get_pattern())]
    return (
        emit(meta),
        store(reshaped),
        store(bits),
        store(transposed),
        store(bcast),
        store(row5),
        store(odd),
        store(right),
        store(on_chip),
    )


@nki.jit
def annotated(x: nt.tensor[64, 96], w: nt.tensor[(64, 96), nl.float32]):
    """Shapes from nki.typing annotations: compiled without tensor arguments."""
    P, F = x.shape
    a, b = load(x), load(w)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.subtract)
    return store(a)
