"""Beta 1 kernels whose nki.isa calls return their result (written for the nkic tests)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def iota_grid():
    out = nl.ndarray((64, 256), dtype=nl.int32, buffer=nl.shared_hbm)
    expr = nl.arange(64)[:, None] * 1000 + nl.arange(256)[None, :] * 3 + 7
    t = nisa.iota(expr, dtype=nl.int32)
    nl.store(out, value=t)
    return out


@nki.jit
def memset_fill():
    out = nl.ndarray((32, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nisa.memset(shape=(32, 96), value=-2.5, dtype=nl.float32)
    nl.store(out, value=t)
    return out


@nki.jit
def lower_triangle(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:128]
    t = nl.load(a[ip, jf])
    kept = nisa.affine_select(pred=(jf <= ip), on_true_tile=t[ip, jf], on_false_value=-9.0)
    nl.store(out[ip, jf], value=kept)
    return out


@nki.jit
def squared_scaled(a, b):
    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    x = nl.load(a)
    bias = nl.load(b)
    y = nisa.activation(op=np.square, data=x, bias=bias, scale=2.0, dtype=nl.bfloat16)
    nl.store(out, value=y)
    return out


@nki.jit
def row_stats(a):
    mean = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    var = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    stats = nisa.bn_stats(x, dtype=nl.float32)
    mv = nisa.bn_aggr(stats)
    nl.store(mean, value=mv[:, 0:1])
    nl.store(var, value=mv[:, 1:2])
    return mean, var


@nki.jit
def reduce_and_top8(a):
    total = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
    top = nl.ndarray((a.shape[0], 8), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    s = nisa.tensor_reduce(np.add, x, axis=[1], keepdims=True)
    m = nisa.max8(src=x)
    nl.store(total, value=s)
    nl.store(top, value=m)
    return total, top


@nki.jit
def column_sums(a):
    out = nl.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    s = nisa.tensor_partition_reduce(np.add, x)
    nl.store(out, value=s)
    return out


@nki.jit
def scaled_copy(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    r = nisa.reciprocal(x)
    c = nisa.tensor_copy(r, dtype=nl.float32)
    nl.store(out, value=c)
    return out


@nki.jit
def broadcast_sum(a, row, col):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    r = nl.load(row)
    c = nl.load(col)
    y = nl.add(x, r)
    nl.store(out, value=y * c)
    return out


@nki.jit
def matmul_stored_from_psum(lhsT, rhs):
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.hbm)
    g = nl.mgrid[0 : lhsT.shape[0], 0 : lhsT.shape[1]]
    s = nl.load(lhsT[g.p, g.x])
    m = nl.load(rhs)
    nl.store(out, value=nisa.nc_matmul(s, m))
    return out


@nki.jit
def uniform_default_dtype():
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.rand((128, 64)))
    return out


@nki.jit
def combine_with(a, op):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value=nisa.tensor_tensor(x, x * 0.5, op=op))
    return out


@nki.jit
def gather_rows(data, idx):
    out = nl.ndarray((idx.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(idx.shape[0])[:, None]
    i_f = nl.arange(data.shape[1])[None, :]
    rows = nl.load(idx[i_p])
    nl.store(out, value=nl.load(data[rows[i_p, 0], i_f]))
    return out


@nki.jit
def scatter_rows(data, idx):
    out = nl.ndarray((2 * data.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    zeros = nl.zeros((data.shape[0], data.shape[1]), dtype=data.dtype)
    nl.store(out[0 : data.shape[0], :], value=zeros)
    nl.store(out[data.shape[0] : 2 * data.shape[0], :], value=zeros)
    i_f = nl.arange(data.shape[1])[None, :]
    rows = nisa.iota(2 * nl.arange(data.shape[0])[:, None], dtype=nl.int32)
    nl.store(out[rows, i_f], value=nl.load(data))
    return out


@nki.jit
def scaled_by_numpy_scalar(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(
        out,
        value=nisa.tensor_scalar(
            x, np.multiply, np.float32(0.1), op1=np.add, operand1=nl.int32(3.7)
        ),
    )
    return out


@nki.jit
def broadcast_int_row(row):
    out = nl.ndarray((128, row.shape[1]), dtype=row.dtype, buffer=nl.shared_hbm)
    t = nl.load(row)
    nl.store(out, value=nl.broadcast_to(t, shape=(128, row.shape[1])))
    return out
