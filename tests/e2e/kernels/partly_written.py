"""Kernels that compute on tiles of which only some partitions were written, and use only the
lanes computed from written data (as GpSimd's nonzero_with_count invites)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def nonzero_of_row(x):
    """x: [1, T]. Output [1, T + 1]: the positions of x's nonzero elements, -1 padding, then
    their count; only partition 0 of the 128-partition tiles is loaded and stored."""
    T = x.shape[1]
    src = nl.ndarray((128, T), dtype=x.dtype, buffer=nl.sbuf)
    dst = nl.ndarray((128, T + 1), dtype=nl.int32, buffer=nl.sbuf)
    out = nl.ndarray((1, T + 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src[0, :], src=x)
    nisa.nonzero_with_count(dst=dst, src=src, index_offset=0, padding_val=-1)
    nisa.dma_copy(dst=out[0, :], src=dst[0, :])
    return out


@nki.jit
def exp_of_rows(x, rows_out, first_row):
    """x: [R, F] with R < 128, loaded into the first R partitions of a 128-partition tile whose
    exp is computed whole; rows first_row..rows_out-1 of the result are stored."""
    R, F = x.shape
    t = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
    e = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((rows_out - first_row, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t[0:R, :], src=x)
    nisa.activation(dst=e, op=nl.exp, data=t)
    nisa.dma_copy(dst=out, src=e[first_row:rows_out, :])
    return out


@nki.jit
def sum_of_rows(x, y, rows_out):
    """x, y: [R, F] bf16 with R < 128, loaded into the first R partitions of two 128-partition
    tiles added whole; rows 0..rows_out-1 of the bf16 sum are stored."""
    R, F = x.shape
    a = nl.ndarray((128, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((128, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    s = nl.ndarray((128, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    out = nl.ndarray((rows_out, F), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=a[0:R, :], src=x)
    nisa.dma_copy(dst=b[0:R, :], src=y)
    nisa.tensor_tensor(dst=s, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=s[0:rows_out, :])
    return out
