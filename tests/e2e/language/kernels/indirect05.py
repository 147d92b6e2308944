"""Tensor indirection (`.indirect(index)`, NKI 0.5, trn3): column gathers and scatters on compute
instructions. `a` is (128, 64); `idx` is a (P, K) int32 tile of column offsets."""

import nki
import nki.isa as nisa
import nki.language as nl


def load(src, dtype=None):
    t = nl.ndarray(src.shape, dtype=dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def gather_copy(a, idx, n):
    """Also for a (P, 4, 16) tile: the offsets index its 64 free elements in row-major order."""
    t = load(a)
    ix = load(idx)
    o = nl.ndarray((a.shape[0], n), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=n))
    return store(o)


@nki.jit
def gather_add(a, idx, y):
    t = load(a)
    ix = load(idx)
    b = load(y)
    o = nl.ndarray(y.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=o, data1=t.indirect(ix, num_elem=y.shape[1]), data2=b, op=nl.add)
    return store(o)


@nki.jit
def gather_exp(a, idx, n):
    t = load(a)
    ix = load(idx)
    o = nl.ndarray((a.shape[0], n), dtype=a.dtype, buffer=nl.sbuf)
    nisa.activation(dst=o, op=nl.exp, data=t.indirect(ix, num_elem=n), scale=0.5)
    return store(o)


@nki.jit
def gather_matmul(s, m, idx, n):
    st = load(s, nl.bfloat16)
    mv = load(m, nl.bfloat16)
    ix = load(idx)
    p = nl.ndarray((s.shape[1], n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=st, moving=mv.indirect(ix, num_elem=n))
    o = nl.ndarray((s.shape[1], n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p)
    return store(o)


@nki.jit
def scatter_copy(a, idx, s):
    o = load(a)
    ix = load(idx)
    v = load(s)
    nisa.tensor_copy(dst=o.indirect(ix, num_elem=s.shape[1]), src=v)
    return store(o)


@nki.jit
def scatter_scaled(a, idx, s):
    o = load(a)
    ix = load(idx)
    v = load(s)
    nisa.tensor_scalar(
        dst=o.indirect(ix, num_elem=s.shape[1]), data=v, op0=nl.multiply, operand0=2.0
    )
    return store(o)


@nki.jit
def gather_blocks(a, idx):
    """Block j gathers with index tile idx[j]: a bad offset in block 1 faults in iteration 1."""
    t = load(a)
    out = nl.ndarray((idx.shape[0], a.shape[0], 16), dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(idx.shape[0]):
        ix = nl.ndarray((a.shape[0], 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ix, src=idx[j])
        o = nl.ndarray((a.shape[0], 16), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16))
        nisa.dma_copy(dst=out[j], src=o)
    return out


@nki.jit
def scatter_matmul(s, m, idx, w):
    """Columns of s.T @ m land in the columns of a (M, w) PSUM tile the offsets name."""
    st = load(s, nl.bfloat16)
    mv = load(m, nl.bfloat16)
    ix = load(idx)
    p = nl.ndarray((s.shape[1], w), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=p, value=0.0)
    nisa.nc_matmul(dst=p.indirect(ix, num_elem=m.shape[1]), stationary=st, moving=mv)
    o = nl.ndarray((s.shape[1], w), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p)
    return store(o)


@nki.jit
def scatter_predicated(a, idx, s, pred):
    o = load(a)
    ix = load(idx)
    v = load(s)
    c = load(pred)
    nisa.tensor_copy_predicated(dst=o.indirect(ix, num_elem=s.shape[1]), src=v,
                                predicate=c)
    return store(o)


@nki.jit
def gather_sum(a, idx, n):
    t = load(a)
    ix = load(idx)
    o = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=o, op=nl.add, data=t.indirect(ix, num_elem=n), axis=1, keepdims=True)
    return store(o)


@nki.jit
def small_tiles(a, idx):
    """32-partition tiles while a wide one holds partitions 0..31: the allocator would put
    them at partition 32; tensor indirection keeps its operands at partition 0."""
    wide = nl.ndarray((32, 8192), dtype=nl.float32, buffer=nl.sbuf, name="wide")
    nisa.memset(dst=wide, value=1.0)
    t = nl.ndarray((32, 64), dtype=a.dtype, buffer=nl.sbuf, name="t")
    nisa.dma_copy(dst=t, src=a)
    ix = nl.ndarray((32, 1), dtype=nl.int32, buffer=nl.sbuf, name="ix")
    nisa.dma_copy(dst=ix, src=idx)
    o = nl.ndarray((32, 16), dtype=a.dtype, buffer=nl.sbuf, name="o")
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16))
    nisa.tensor_tensor(dst=o, data1=o, data2=wide[:, 0:16], op=nl.add)
    return store(o)


@nki.jit
def gather_exp_scatter(a, src_idx, dst_idx, n):
    """exponential gathers its src columns and scatters its dst columns in one instruction."""
    t = load(a)
    sx = load(src_idx)
    dx = load(dst_idx)
    o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=o, value=0.0)
    nisa.exponential(dst=o.indirect(dx, num_elem=n), src=t.indirect(sx, num_elem=n),
                     max_value=1.0)
    return store(o)


@nki.jit
def gather_written_half(a, idx):
    """Only columns 0..31 of t are written: gathering them is valid, checked when it runs."""
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:32], src=a[:, 0:32])
    ix = load(idx)
    o = nl.ndarray((a.shape[0], 16), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16))
    return store(o)


@nki.jit
def gather_matmul_mx(st, mv, st_scale, mv_scale, idx, m):
    """MXFP8 stationary columns and their scales gathered by one index tile."""
    ts = load(st)
    tm = load(mv)
    ss = load(st_scale)
    ms = load(mv_scale)
    ix = load(idx)
    p = nl.ndarray((m, mv.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(
        dst=p,
        stationary=ts.view(nl.float8_e4m3fn_x4).indirect(ix, num_elem=m),
        moving=tm.view(nl.float8_e4m3fn_x4),
        stationary_scale=ss.indirect(ix, num_elem=m),
        moving_scale=ms,
    )
    o = nl.ndarray((m, mv.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p)
    return store(o)


@nki.jit
def gather_from_psum(s, m, idx, n):
    """Columns of a matmul result gathered straight from PSUM."""
    st = load(s, nl.bfloat16)
    mv = load(m, nl.bfloat16)
    ix = load(idx)
    p = nl.ndarray((s.shape[1], m.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=st, moving=mv)
    o = nl.ndarray((s.shape[1], n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p.indirect(ix, num_elem=n))
    return store(o)
