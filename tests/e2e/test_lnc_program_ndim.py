"""`nl.program_ndim()`: the launch grid's rank, 1 at LNC=2 (the grid `[2]`), 0 at LNC=1. Kernels
that shard only when the launch has a grid (the NKI Library's helpers do) split their work
between the cores at LNC=2."""

from __future__ import annotations

import numpy as np

import nkic

SOURCE = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a):
    ndim = nl.program_ndim()
    shards, shard = (nl.num_programs(axes=0), nl.program_id(axis=0)) if ndim != 0 else (1, 0)
    rows = a.shape[0] // shards
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, a.shape[1]), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[shard * rows:(shard + 1) * rows, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=float(10 * ndim + shards))
    nisa.dma_copy(dst=out[shard * rows:(shard + 1) * rows, :], src=t)
    return out
"""


def test_program_ndim_is_the_launch_grids_rank(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(SOURCE)
    a = np.random.default_rng(0).standard_normal((128, 64), dtype=np.float32)
    # one core: no grid, one shard of every row
    np.testing.assert_array_equal(nkic.compile(path, a)(a), a + np.float32(1.0))
    # LNC=2: a one-axis grid of two programs, each storing its half of the rows
    two = nkic.compile(path, a, lnc=2)
    np.testing.assert_array_equal(two(a), a + np.float32(12.0))
    dma = [c["engines"]["dma"]["instructions"] for c in two.profile["cores"]]
    assert dma[0] == dma[1] == 2
    # reading the grid's rank makes `nkic check` check both degrees
    assert nkic.check(path, a=nkic.TensorSpec(a.shape, "float32")) == []
