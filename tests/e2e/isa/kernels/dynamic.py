"""DMA with runtime offsets: row gathers and scatters by an index tile (`.ap(vector_offset=)`)
and a block moved by one index (`.ap(scalar_offset=)`)."""

import nki
import nki.isa as nisa
import nki.language as nl


def load_index(ids):
    idx = nl.ndarray(ids.shape, dtype=ids.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=ids)
    return idx


@nki.jit
def gather(table, ids, OOB="error", FILL=-1.0):
    # out[p, :] = table[ids[p], :]; with OOB="skip" a row whose id is outside keeps FILL
    P, D = ids.shape[0], table.shape[1]
    idx = load_index(ids)
    rows = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=rows, value=FILL)
    mode = nisa.oob_mode.skip if OOB == "skip" else nisa.oob_mode.error
    nisa.dma_copy(dst=rows, src=table.ap([[D, P], [1, D]], vector_offset=idx), oob_mode=mode)
    out = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def gather_tiles(table, ids):
    # 128 ids per tile, one gather per iteration of a symbolic loop
    N, D = ids.shape[0], table.shape[1]
    out = nl.ndarray((N, D), dtype=table.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(N // 128):
        idx = nl.ndarray((128, 1), dtype=ids.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ids[i * 128 : (i + 1) * 128, :])
        rows = nl.ndarray((128, D), dtype=table.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=table.ap([[D, 128], [1, D]], vector_offset=idx))
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=rows)
    return out


@nki.jit
def scatter(table, ids, values):
    # out = table with out[ids[p], :] = values[p, :]
    R, D = table.shape
    P = ids.shape[0]
    out = nl.ndarray((R, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    idx = load_index(ids)
    v = nl.ndarray((P, D), dtype=values.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=values)
    nisa.dma_copy(dst=out.ap([[D, P], [1, D]], vector_offset=idx), src=v)
    return out


@nki.jit
def block_at(table, pos, P=16, OOB="error"):
    # out = table[pos : pos + P, :]: one index moves the whole block by whole rows; with
    # OOB="skip" a block leaving the table is not moved at all (out keeps zeros)
    D = table.shape[1]
    idx = load_index(pos)
    t = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    mode = nisa.oob_mode.skip if OOB == "skip" else nisa.oob_mode.error
    src = table.ap([[D, P], [1, D]], scalar_offset=idx, indirect_dim=0)
    nisa.dma_copy(dst=t, src=src, oob_mode=mode)
    out = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def gather_into_compute(table, ids):
    # a dynamic view is a DMA operand only: here it feeds a Vector-engine copy
    P, D = ids.shape[0], table.shape[1]
    idx = load_index(ids)
    rows = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=rows, src=table.ap([[D, P], [1, D]], vector_offset=idx))
    out = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def misuse(table, ids, CASE="sbuf_base"):
    P, D = ids.shape[0], table.shape[1]
    idx = load_index(ids)
    rows = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
    if CASE == "sbuf_base":
        nisa.dma_copy(dst=rows.ap([[D, P], [1, D]], vector_offset=idx), src=table[0:P, :])
    elif CASE == "float_index":
        f = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=f, value=0.0)
        nisa.dma_copy(dst=rows, src=table.ap([[D, P], [1, D]], vector_offset=f))
    elif CASE == "sliced":
        view = table.ap([[D, P], [1, D]], vector_offset=idx)
        nisa.dma_copy(dst=rows[:, 0:8], src=view[:, 0:8])
    elif CASE == "two_columns":
        wide = nl.ndarray((P, 2), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=wide, value=0)
        nisa.dma_copy(dst=rows, src=table.ap([[D, P], [1, D]], vector_offset=wide))
    elif CASE == "hwdge":
        src = table.ap([[D, P], [1, D]], vector_offset=idx)
        nisa.dma_copy(dst=rows, src=src, dge_mode=nisa.dge_mode.hwdge)
    out = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out


@nki.jit
def move_rows(table, src_ids, dst_ids):
    # out = table, then out[dst_ids[p]] = table[src_ids[p]] in one HBM-to-HBM transfer; an
    # outside index on either side skips its row
    R, D = table.shape
    P = src_ids.shape[0]
    out = nl.ndarray((R, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    src_idx = load_index(src_ids)
    dst_idx = load_index(dst_ids)
    nisa.dma_copy(
        dst=out.ap([[D, P], [1, D]], vector_offset=dst_idx),
        src=table.ap([[D, P], [1, D]], vector_offset=src_idx),
        oob_mode=nisa.oob_mode.skip,
    )
    return out


@nki.jit
def gather_accumulate(table, ids, OOB="error"):
    # out[p, :] = sum over k of table[ids[p, k], :]: the first row set is copied, the others
    # added by dma_compute reading the table through a vector_offset (a DMA read-modify-write)
    P, K = ids.shape
    D = table.shape[1]
    idx = load_index(ids)
    acc = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    mode = nisa.oob_mode.skip if OOB == "skip" else nisa.oob_mode.error
    for k in range(K):
        rows = table.ap([[D, P], [1, D]], vector_offset=idx.ap([[K, P], [1, 1]], offset=k))
        nisa.dma_compute(dst=acc, srcs=[rows, acc], reduce_op=nl.add, oob_mode=mode)
    out = nl.ndarray((P, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def block_transposed(table, pos, P=16, OOB="error"):
    # out = table[pos : pos + P, :].T: a DMA transpose of a block moved by one runtime index
    # (NKI 0.5); with OOB="skip" a block leaving the table is not moved (out keeps zeros)
    D = table.shape[1]
    idx = load_index(pos)
    t = nl.ndarray((D, P), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    mode = nisa.oob_mode.skip if OOB == "skip" else nisa.oob_mode.error
    src = table.ap([[D, P], [1, D]], scalar_offset=idx, indirect_dim=0)
    nisa.dma_transpose(dst=t, src=src, oob_mode=mode)
    out = nl.ndarray((D, P), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def scatter_by_columns(table, ids, values):
    # out = table with out[ids[p, k], :] = values[p, k, :]: one scatter per column k, whose
    # indices are column k of the index tile as a (P, 1, 1) view
    R, D = table.shape
    P, K = ids.shape
    out = nl.ndarray((R, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    idx = load_index(ids)
    v = nl.ndarray((P, K, D), dtype=values.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=values)
    for k in range(K):
        column = idx.ap([[K, P], [1, 1], [1, 1]], offset=k)
        nisa.dma_copy(dst=out.ap([[D, P], [1, D]], vector_offset=column), src=v[:, k, :])
    return out


@nki.jit
def scatter_elements(table, flat_ids, values):
    # out = table with out.flat[flat_ids[p]] = values[p, 0]: the indices count single elements
    # of a 1-D reshape of the output, not its rows
    R, D = table.shape
    P = flat_ids.shape[0]
    out = nl.ndarray((R, D), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    idx = load_index(flat_ids)
    v = nl.ndarray((P, 1), dtype=values.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=values)
    flat = out.reshape((R * D,))
    nisa.dma_copy(dst=flat.ap([[1, P], [1, 1]], offset=0, vector_offset=idx), src=v)
    return out


@nki.jit
def gather_pairs(table, ids):
    # out[p, :] = table.flat[2 * ids[p] : 2 * ids[p] + 2]: rows of a [R*D/2, 2] reshape
    R, D = table.shape
    P = ids.shape[0]
    idx = load_index(ids)
    pairs = table.reshape((R * D // 2, 2))
    rows = nl.ndarray((P, 2), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=pairs.ap([[2, P], [1, 2]], vector_offset=idx))
    out = nl.ndarray((P, 2), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out
