"""Beta 1 kernels written for the nkic migrate tests: results of value-returning nki.isa calls
written into views, annotated and accumulated, the module written out, par_dim by name."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
from neuronxcc.nki.language import par_dim


@nki.jit
def into_views(a, b):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a[0:128, 0:256])
    y = nl.load(b[0:128, 0:256])
    res = nl.ndarray((par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
    res[:, 0:256] = nisa.activation(nl.exp, x)
    c: nt.tensor[128, 256] = nki.isa.tensor_tensor(x, y, np.add)
    res[:, 256:512] = nisa.tensor_scalar(c, np.multiply, 0.5)
    nl.store(out[0:128, 0:512], value=res)
    return out


@nki.baremetal
def matmul_views(lhsT, rhs):
    K, M = lhsT.shape
    out = nl.ndarray((2, M, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, par_dim(M), 512), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(2):
        for k in nl.affine_range(K // 128):
            s = nl.load(lhsT[k * 128 : (k + 1) * 128, 0:M])
            m = nl.load(rhs[k * 128 : (k + 1) * 128, j * 512 : (j + 1) * 512])
            acc[j, :, :] += nisa.nc_matmul(s, m)
    for j in nl.affine_range(2):
        t = nl.copy(acc[j, :, :])
        nl.store(out[j, 0:M, 0:512], value=t)
    return out


@nki.jit
def matmul_into_sbuf(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.load(lhsT[0:128, 0:128])
    m = nl.load(rhs[0:128, 0:512])
    prod = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    prod[...] = nisa.nc_matmul(s, m)
    nl.store(out[0:128, 0:512], value=prod)
    return out
