"""Kernels written as for the official simulator: `import nki`, `@nki.jit`, nothing from nkic."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add_kernel(a_input, b_input):
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.sbuf)
    b = nl.ndarray(b_input.shape, dtype=b_input.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=a_input)
    nisa.dma_copy(dst=b, src=b_input)
    c = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=c_output, src=c)
    return c_output


@nki.jit(mode="simulation")
def scaled_diff(x, y, scale=1.0):
    """(x - y) * scale and x * y, as two outputs."""
    diff_out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    prod_out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    xs = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    ys = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    nisa.dma_copy(dst=ys, src=y)
    d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=d, data1=xs, data2=ys, op=nl.subtract)
    ds = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=ds, data=d, op0=nl.multiply, operand0=scale)
    p = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=p, data1=xs, data2=ys, op=nl.multiply)
    nisa.dma_copy(dst=diff_out, src=ds)
    nisa.dma_copy(dst=prod_out, src=p)
    return diff_out, prod_out


@nki.jit
def double_in_place(x):
    """x *= 2, written back into the input; returns nothing."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=x, src=t)


@nki.jit
def out_of_bounds(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, 0:64])
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def copy_as_tuple(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return (out,)


@nki.jit
def scale_halves(x):
    """Rows split between the logical cores: core c multiplies its half by c + 1."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    core = nl.program_id(0)
    rows = x.shape[0] // nl.num_programs(0)
    t = nl.ndarray((rows, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[core * rows : (core + 1) * rows, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=core + 1.0)
    nisa.dma_copy(dst=out[core * rows : (core + 1) * rows, :], src=t)
    return out
