"""The official Quick Start shape: host code at the top level of the kernel's file."""

import numpy as np

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


a = np.random.rand(128, 512).astype(np.float32)
b = np.random.rand(128, 512).astype(np.float32)
result = nki.simulate(add_kernel)(a, b)
np.testing.assert_allclose(result, a + b, rtol=1e-5)
print("quickstart ok")
