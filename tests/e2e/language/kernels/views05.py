"""Kernels for the NKI 0.5 NkiTensor views: reshape_dim, flatten_dims, rearrange, and the
runtime-indexed vector_select and select."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rearranged(a, h=4):
    """(P, h*w) -> (P, w, h): rearrange(('p', ('h', 'w')), ('p', 'w', 'h'))."""
    P, F = a.shape
    t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    v = t.rearrange(("p", ("h", "w")), ("p", "w", "h"), {"h": h})
    out_t = nl.ndarray(v.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out_t, src=v)
    out = nl.ndarray(v.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=out_t)
    return out


@nki.jit
def split_and_merge(a):
    """(P, 24) split into (P, 2, 3, 4), dims 1..2 merged: (P, 6, 4), then the last dimension
    split as (2, -1) and its first half negated in place."""
    P = a.shape[0]
    t = nl.ndarray((P, 24), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    v = t.reshape_dim(1, (2, 3, 4)).flatten_dims(1, 2)
    assert v.shape == (P, 6, 4) and v.is_contiguous()
    halves = v.reshape_dim(2, (2, -1))
    first = halves.select(2, 0)
    nisa.tensor_scalar(dst=first, data=first, op0=nl.multiply, operand0=-1.0)
    out = nl.ndarray((P, 6, 4), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=v)
    return out


@nki.jit
def gather_rows(table, ids):
    """out[p] = table[ids[p]] through vector_select."""
    P = ids.shape[0]
    idx = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    rows = table.vector_select(0, idx)
    assert rows.is_indirect() and rows.shape == (P,) + tuple(table.shape[1:])
    t = nl.ndarray(rows.shape, dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=rows)
    out = nl.ndarray(rows.shape, dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def select_block(x, pos):
    """out = x[pos[0, 0]] for a 3-D HBM tensor, through a runtime select on dimension 0."""
    idx = nl.ndarray((1, 1), dtype=pos.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=pos)
    block = x.select(0, idx)
    t = nl.ndarray(block.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=block)
    out = nl.ndarray(block.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def flatten_not_contiguous(a):
    t = nl.ndarray((128, 4, 8), dtype=a.dtype, buffer=nl.sbuf)
    v = t.permute((0, 2, 1)).flatten_dims(1, 2)
    return a


@nki.jit
def vector_select_on_chip(a):
    t = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.sbuf)
    idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    v = t.vector_select(0, idx)
    return a


@nki.jit
def rearrange_unknown_name(a):
    t = nl.ndarray((128, 24), dtype=a.dtype, buffer=nl.sbuf)
    v = t.rearrange(("p", ("h", "w")), ("p", "w", "x"), {"h": 4})
    return a


@nki.jit
def indirect_columns(a):
    t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
    idx = nl.ndarray((16, 2), dtype=nl.int32, buffer=nl.sbuf)
    v = t.indirect(idx)
    return a
