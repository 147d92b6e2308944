"""Beta 1 style kernels written for the nkic tests (neuronxcc.nki namespace)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def add_rows(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[i * 128 + i_p, i_f])
        y = nl.load(b[i * 128 + i_p, i_f])
        nl.store(out[i * 128 + i_p, i_f], value=x + y * 2.0)
    return out


@nki.jit
def matmul_psum(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    ip, im = nl.mgrid[0:128, 0:128]
    jp, jn = nl.mgrid[0:128, 0:N]
    acc = nl.zeros((nl.par_dim(M), N), dtype=np.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        s = nl.load(lhsT[k * 128 + ip, im])
        m = nl.load(rhs[k * 128 + jp, jn])
        acc += nisa.nc_matmul(s, m)
    res = nl.copy(acc, dtype=np.float32)
    nl.store(out[ip, jn], value=res)
    return out


@nki.jit
def matmul_named_partials(lhsT, rhs):
    # each partial product is kept under a name and also summed: both must hold their values
    out = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
    last = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 256), dtype=np.float32, buffer=nl.psum)
    ip = nl.arange(128)[:, None]
    im = nl.arange(128)[None, :]
    jn = nl.arange(256)[None, :]
    for k in nl.sequential_range(2):
        s = nl.load(lhsT[k * 128 + ip, im])
        m = nl.load(rhs[k * 128 + ip, jn])
        part = nisa.nc_matmul(s, m)
        acc += part
        nl.store(last[ip, jn], value=nl.copy(part, dtype=np.float32))
    nl.store(out[ip, jn], value=nl.copy(acc, dtype=np.float32))
    return out, last


@nki.jit
def strided_cols(a):
    out = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(256)[None, :]
    t = nl.load(a[i_p, 2 * i_f + 1])
    e = nisa.activation(nl.exp, t)
    nl.store(out[i_p, i_f], value=e)
    return out


@nki.jit
def masked(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    t = nl.load(a[i_p, i_f])
    e = nisa.activation(nl.exp, t, mask=(i_p == 64))
    nl.store(out[i_p, i_f], value=e)
    return out


@nki.jit
def mixed(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(512)[None, :]
    t = nl.load(a[0:128, i_f])
    nl.store(out[0:128, 0:512], value=t)
    return out


@nki.jit
def transposed(a):
    out = nl.ndarray((512, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    t = nl.load(a[i_f, i_p])
    nl.store(out[i_f, i_p], value=t)
    return out


@nki.jit
def scale_shift(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:512]
    t = nl.load(a[i_p, i_f])
    y = nisa.tensor_scalar(t, np.multiply, 3.0, op1=np.add, operand1=1.0)
    nl.store(out[i_p, i_f], value=y)
    return out
