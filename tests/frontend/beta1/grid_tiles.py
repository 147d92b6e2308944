"""Beta 1 SPMD grid kernels written for the nkic tests: every program of the launch grid
handles one tile, chosen by its `nl.program_id`s."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_grid(a, b):
    """out = a + b; program (i, j) of a [M / 128, N / 256] grid adds tile (i, j)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    j = nl.program_id(1)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(256)[None, :]
    x = nl.load(a[i * 128 + i_p, j * 256 + i_f])
    y = nl.load(b[i * 128 + i_p, j * 256 + i_f])
    nl.store(out[i * 128 + i_p, j * 256 + i_f], value=x + y)
    return out


@nki.jit
def grid_shape(a):
    """Each element of row block `r` holds r's program count and the grid's rank."""
    out = nl.ndarray((nl.num_programs(0) * 128, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    r = nl.program_id(axis=0)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(8)[None, :]
    t = nl.load(a[i_p, i_f])
    v = t * 0.0 + (nl.num_programs() * 10 + nl.program_ndim() + r * 100)
    nl.store(out[r * 128 + i_p, i_f], value=v)
    return out


@nki.jit
def one_too_many(a):
    """Program 2 of a 3-program grid reads past the end of a 256-row input."""
    out = nl.ndarray((384, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(a[i * 128 + i_p, i_f])
    nl.store(out[i * 128 + i_p, i_f], value=t)
    return out
