"""Rows split between the cores, the last core taking the remainder: with one row, core 0's
share is the empty slice nl.ds(0, 0), which it never copies."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def uneven_rows(a, USE_EMPTY=False):
    rows, cols = a.shape
    cores, core = nl.num_programs(), nl.program_id()
    nominal = rows // cores
    share = rows - core * nominal if core == cores - 1 else nominal
    mine = nl.ds(core * nominal, share)
    src, out = a[mine], nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    dst = out[mine]
    for r in range(share if not USE_EMPTY else 1):
        t = nl.ndarray((1, cols), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src[r : r + 1] if not USE_EMPTY else src)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=dst[r : r + 1], src=t)
    return out
