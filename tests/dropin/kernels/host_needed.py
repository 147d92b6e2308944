"""A kernel that uses a name only host code at the file's top level defines."""

import numpy as np

import nkic
import nki
import nki.isa as nisa
import nki.language as nl

ROWS = np.random.randint(1, 2) * 128


@nki.jit
def copy_rows(x):
    out = nl.ndarray((ROWS, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((ROWS, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:ROWS, :])
    nisa.dma_copy(dst=out, src=t)
    return out


x = np.ones((128, 8), np.float32)
try:
    nki.simulate(copy_rows)(x)
except nkic.CompileError as e:
    for d in e.diagnostics:
        print(d.severity, d.code, d.loc.line, d.loc.file.endswith("host_needed.py"))
