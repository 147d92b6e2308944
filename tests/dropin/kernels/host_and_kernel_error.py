"""Top-level host code and a mistake in the kernel: the kernel's error is reported."""

import numpy as np

import nkic
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def bad_copy(x):
    out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:256, :])
    nisa.dma_copy(dst=out, src=t)
    return out


x = np.random.rand(128, 8).astype(np.float32)
try:
    nki.simulate(bad_copy)(x)
except nkic.CompileError as e:
    for d in e.diagnostics:
        print(d.severity, d.code, d.loc.line)
