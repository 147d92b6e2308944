"""Beta 1 kernels whose index grids no slice can replace: each becomes an access pattern, an
`iota` / `affine_select` pattern or an indirect DMA with a vector offset in current NKI."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

sb_mod = nki.compiler.sbuf.mod_alloc


@nki.jit
def swap_blocks(a, blocks):
    """Each row of `a` holds a (blocks[0], blocks[1]) matrix; the rows of the result hold it
    transposed."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, _ = a.shape
    n1, n2 = blocks
    t = nl.load(a)
    i_p = nl.arange(rows)[:, None, None]
    i_1 = nl.arange(n1)[None, :, None]
    i_2 = nl.arange(n2)[None, None, :]
    u = nl.ndarray((rows, n1 * n2), dtype=a.dtype)
    u[i_p, i_2 * n1 + i_1] = nl.copy(t[i_p, i_1 * n2 + i_2])
    nl.store(out, value=u)
    return out


@nki.jit
def pool_sums(a, k):
    """Sums of the k x k windows of each (h, w) plane of `a` (c, h, w)."""
    c, h, w = a.shape
    out = nl.ndarray((c, h // k, w // k), dtype=a.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:c, 0 : h // k, 0:k, 0 : w // k, 0:k]
    t = nl.load(a)
    s = nl.sum(t[i0, k * i1 + i2, k * i3 + i4], axis=[2, 4])
    nl.store(out, value=s)
    return out


@nki.jit
def ramps():
    """Integer ramps made by iota: across the free axis, down the partitions, both."""
    out_a = nl.ndarray((1, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    out_b = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    out_c = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    i_f = nl.arange(256)[None, :]
    i_p = nl.arange(128)[:, None]
    down = i_f * -2 + 7
    a = nisa.iota(down, dtype=nl.int32)
    b = nisa.iota(3 * i_p + 1, dtype=nl.int32)
    j_p, j_f = nl.mgrid[0:64, 0:32]
    c = nisa.iota(j_p * 32 + j_f - 100, dtype=nl.float32)
    nl.store(out_a, value=a)
    nl.store(out_b, value=b)
    nl.store(out_c, value=c)
    return out_a, out_b, out_c


@nki.jit
def lower_triangle(a):
    """`a` (128, 128) with the elements above the diagonal replaced by -1."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    t = nl.load(a[i_p, i_f])
    low = nisa.affine_select(pred=(i_f <= i_p), on_true_tile=t, on_false_value=-1.0)
    nl.store(out[i_p, i_f], value=low)
    return out


@nki.jit
def gather_rows(data, idx):
    """Rows idx[0], idx[1], ... of `data`, gathered by an indirect DMA."""
    n = idx.shape[0]
    out = nl.ndarray((n, data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(n)[:, None]
    i_f = nl.arange(data.shape[1])[None, :]
    rows = nl.load(idx[i_p])
    t = nl.load(data[rows[i_p, 0], i_f])
    nl.store(out, value=t)
    return out


@nki.jit
def even_rows(data):
    """Rows 0, 2, 4, ... of `data` (128, 256), gathered through indices made by iota."""
    out = nl.ndarray((64, 256), dtype=data.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(256)[None, :]
    idx = nisa.iota(2 * nl.arange(64)[:, None], dtype=np.int32)
    t = nl.load(data[idx, i_f])
    nl.store(out, value=t)
    return out


@nki.jit
def block_sums(a):
    """The sum over the first axis of `a` (n, p, f), through a tile with a block dimension."""
    n, p, f = a.shape
    out = nl.ndarray((p, f), dtype=a.dtype, buffer=nl.shared_hbm)
    parts = nl.ndarray((n, nl.par_dim(p), f), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        parts[i] = nl.load(a[i])
    acc = nl.zeros((p, f), dtype=nl.float32)
    for i in nl.sequential_range(n):
        acc[...] = nl.add(acc, parts[i, 0:p, 0:f])
    nl.store(out, value=acc)
    return out


@nki.jit
def allocated_scale(a):
    """2 * a, through tiles placed by direct allocation (which current NKI does itself)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    t[...] = nl.load(a)
    u = nl.ndarray((128, 512), dtype=a.dtype, buffer=sb_mod(base_addr=4096))
    u[...] = nl.multiply(t, 2.0)
    nl.store(out, value=u)
    return out


@nki.jit
def row_pair_max(a):
    """max(a[r], a[r + 1]) per element for r < n - 1, in tiles of 128 rows; the tail tile's
    rows kept by masks."""
    n, m = a.shape
    out = nl.ndarray((n - 1, m), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((n + 126) // 128):
        i_p, i_k, i_f = nl.mgrid[0:128, 0:2, 0:m]
        rows = i * 128 + i_p
        t = nl.load(a[rows + i_k, i_f], mask=(rows < n - 1))
        j_p, j_f, j_k = nl.mgrid[0:128, 0:m, 0:2]
        mx = nl.max(t[j_p, j_k, j_f], axis=[2], mask=(i * 128 + j_p < n - 1))
        o_p, o_f = nl.mgrid[0:128, 0:m]
        nl.store(out[i * 128 + o_p, o_f], value=mx, mask=(i * 128 + o_p < n - 1))
    return out


@nki.jit
def window_max(a):
    """max(a[r], a[r + 1], a[r + 2]) per element for r < n - 2, in tiles of 128 rows. Each
    call keeps other rows: the reduction those of the input (two more than the load wrote,
    whose results the store drops), the store those of the output."""
    n, m = a.shape
    out = nl.ndarray((n - 2, m), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((n + 127) // 128):
        t = nl.ndarray((nl.par_dim(128), 3, m), dtype=a.dtype, buffer=nl.sbuf)
        i_p, i_k, i_f = nl.mgrid[0:128, 0:3, 0:m]
        i_p = i * 128 + i_p
        t = nl.load(a[i_p + i_k, i_f], mask=(i_p < n - 2))
        j_p, j_f, j_k = nl.mgrid[0:128, 0:m, 0:3]
        mx = nl.max(t[j_p, j_k, j_f], axis=[2], mask=(i * 128 + j_p < n))
        o_p, o_f = nl.mgrid[0:128, 0:m]
        o_p = i * 128 + o_p
        nl.store(out[o_p, o_f], value=mx, mask=(o_p < n - 2))
    return out


@nki.jit
def tail_copy(a):
    """a copied in tiles of 128 rows through SBUF; the tail tile's rows kept by masks."""
    n, m = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((n + 127) // 128):
        i_p, i_f = nl.mgrid[0:128, 0:m]
        rows = i * 128 + i_p
        t = nl.ndarray((128, m), dtype=a.dtype, buffer=nl.sbuf)
        t[i_p, i_f] = nl.load(a[rows, i_f], mask=(rows < n))
        nl.store(out[rows, i_f], value=t[i_p, i_f], mask=(rows < n))
    return out


@nki.jit
def scatter_add(a):
    """ones (2n, m), with row i of `a` (n, m) added to row 2i by a read-modify-write DMA."""
    n, m = a.shape
    out = nl.ndarray((2 * n, m), dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(m)[None, :]
    t = nl.load(a)
    idx = nisa.iota(2 * nl.arange(n)[:, None], dtype=np.int32)
    ones = nisa.memset(shape=(2 * n, m), value=1, dtype=a.dtype)
    nl.store(out, value=ones)
    nisa.dma_copy(dst=out[idx, i_f], src=t, dst_rmw_op=np.add)
    return out


@nki.jit
def segment_bounds(ids):
    """The start and end of the segment of each element of `ids` (1, n)."""
    _, n = ids.shape
    out = nl.ndarray((1, 2, n), dtype=ids.dtype, buffer=nl.shared_hbm)
    t = nl.load(ids)
    bounds = nisa.sequence_bounds(segment_ids=t)
    nl.store(out, value=bounds)
    return out


@nki.jit
def scaled_bias(a, row_bias, col_scale):
    """(a + row_bias) * col_scale, the (128, 1) and (1, 512) operands broadcast implicitly."""
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a[0:128, 0:512])
    b = nl.load(row_bias[0:128, 0:1])
    s = nl.load(col_scale[0:1, 0:512])
    y = nl.multiply(x + b, s)
    nl.store(out, value=y)
    return out


@nki.jit
def column_ramp():
    """An (8, 3) tile with t[i, j] = 5 * j + 1, set one element at a time."""
    out = nl.ndarray((8, 3), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.zeros((8, 3), dtype=nl.int32)
    for i in nl.static_range(8):
        for j in nl.static_range(3):
            t[i, j] = j * 5 + 1
    nl.store(out, value=t)
    return out


@nki.jit
def products_in_psum(a, b):
    """a.T @ b for two (128, 128) blocks of columns of `b`, each written into a view of one
    float32 PSUM tile."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(2):
        acc[:, nl.ds(j * 128, 128)] = nisa.nc_matmul(x, y[:, nl.ds(j * 128, 128)])
    nl.store(out, value=acc)
    return out


@nki.jit
def centered_product(a, b):
    """(a - the maximum of each row of a) @ b, for (128, 128) `a` and (128, 256) `b`."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    top = nl.max(x, axis=1)
    centered = nl.subtract(x, top)
    product = nl.matmul(centered, y)
    nl.store(out, value=product)
    return out


@nki.jit
def blend_pairs(a, weight):
    """out[:, j] = 3 * weight * a[:, 2j] + weight * a[:, 2j + 1] for a (128, 256) `a`: scalars
    times views of a tile, Beta 1's operators."""
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    u = nl.ndarray((128, 128), dtype=a.dtype)
    u[i_p, i_f] = 3 * weight * t[i_p, 2 * i_f] + weight * t[i_p, 2 * i_f + 1]
    nl.store(out, value=u)
    return out


@nki.jit
def scaled_swap(a):
    """Each row of a (128, 12) `a` holds a (3, 4) matrix; the result's rows hold it transposed
    and doubled: a scalar times an access pattern of a tile."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p = nl.arange(128)[:, None, None]
    i_1 = nl.arange(3)[None, :, None]
    i_2 = nl.arange(4)[None, None, :]
    u = nl.ndarray((128, 12), dtype=a.dtype)
    u[i_p, i_2 * 3 + i_1] = 2.0 * t[i_p, i_1 * 4 + i_2]
    nl.store(out, value=u)
    return out


@nki.jit
def identity_transpose(a):
    """a.T for a (128, 128) `a`, through the Tensor engine and an identity loaded from HBM (a
    shared constant in Beta 1)."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    eye = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=a.dtype)
    ones = nl.ndarray((nl.par_dim(128), 128), dtype=a.dtype)
    ones[...] = nl.load(eye)
    x = nl.load(a)
    flipped = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
    flipped[...] = nisa.nc_matmul(x, ones)
    nl.store(out, value=flipped)
    return out


@nki.jit
def identity_rows(a):
    """a * 2 + 1 (1 on the diagonal of a (128, 128) `a` only): the identity matrix loaded in
    another dtype."""
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    eye = nl.shared_identity_matrix(n=128, dtype=nl.bfloat16)
    ones = nl.load(eye, dtype=a.dtype)
    x = nl.load(a)
    nl.store(out, value=nl.add(nl.multiply(x, 2.0), ones))
    return out


@nki.jit
def transposed_load(a):
    """a.T for a (256, 64) `a`, transposed by the load (4-byte elements, which Beta 1's DMA
    transpose took)."""
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(a)
    nl.store(out, value=t)
    return out


@nki.jit
def gathered_transpose(src, idx):
    """The rows of a (64, 4, 32) `src` that the (16, 1) `idx` picks, with their three axes
    reversed: (32, 4, 16)."""
    rows = nl.load(idx)
    _, d1, d2 = src.shape
    i_p = nl.arange(16)[:, None]
    i_1 = nl.arange(d1)[None, :, None]
    i_2 = nl.arange(d2)[None, None, :]
    flipped = nisa.dma_transpose(src[rows[i_p, 0], i_1, i_2], axes=(2, 1, 0))
    out = nl.ndarray((d2, d1, 16), dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, flipped)
    return out


@nki.jit
def row_everywhere(a):
    """The (1, 64) int32 row `a` on each of 128 partitions."""
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.load(a)
    rows = nl.broadcast_to(row, shape=(128, 64))
    nl.store(out, rows)
    return out
