"""x = exp(x) in place, rows sharded over the launch's programs only when it has a grid
(`nl.program_ndim() != 0`), as kernels written for both LNC=1 and LNC=2 launches do."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def exp_in_place(x):
    rows, cols = x.shape
    if nl.program_ndim() != 0:
        cores, core = nl.num_programs(axes=0), nl.program_id(axis=0)
    else:
        cores, core = 1, 0
    per_core = rows // cores
    first = core * per_core
    mine = rows - first if core == cores - 1 else per_core
    if mine > 0:
        t = nl.ndarray((mine, cols), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[first : first + mine, :])
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=x[first : first + mine, :], src=t)
    return x
