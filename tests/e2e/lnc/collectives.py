"""nki.collectives between the two cores of an LNC=2 launch, one kernel per collective: core c
contributes rows [c*R, (c+1)*R) of `a` and writes its result to its own part of `out`."""

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

GROUP = [[0, 1]]


@nki.jit
def all_reduce_max(a):
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((256, F), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 128 : (core + 1) * 128, :])
    top = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[mine], dsts=[top], replica_group=ncc.ReplicaGroup(GROUP), op=nl.maximum)
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=top)
    return out


@nki.jit
def all_gather_cols(a):
    """Each core holds a [128, F] block; after the gather both hold [128, 2F] (dim 1)."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((256, 2 * F), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 128 : (core + 1) * 128, :])
    both = nl.ndarray((128, 2 * F), a.dtype, buffer=nl.sbuf)
    ncc.all_gather(
        srcs=[mine], dsts=[both], replica_group=ncc.ReplicaGroup(GROUP), collective_dim=1
    )
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=both)
    return out


@nki.jit
def reduce_scatter_rows(a):
    """Each core holds a [256, F] HBM block; the sum is split by rows: core c gets rows
    [128c, 128c + 128) of it."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((256, F), a.dtype, buffer=nl.shared_hbm)
    part = nl.ndarray((128, F), a.dtype, buffer=nl.private_hbm)
    ncc.reduce_scatter(
        srcs=[a[core * 256 : (core + 1) * 256, :]],
        dsts=[part],
        replica_group=ncc.ReplicaGroup(GROUP),
        collective_dim=0,
        op=nl.add,
    )
    t = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=part)
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=t)
    return out


@nki.jit
def all_to_all_rows(a):
    """Each core holds [256, F] rows; core c receives rows [128c, 128c + 128) of each core's
    block, its own first."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((512, F), a.dtype, buffer=nl.shared_hbm)
    mixed = nl.ndarray((256, F), a.dtype, buffer=nl.private_hbm)
    ncc.all_to_all(
        srcs=[a[core * 256 : (core + 1) * 256, :]],
        dsts=[mixed],
        replica_group=ncc.ReplicaGroup(GROUP),
        collective_dim=0,
    )
    for h in nl.affine_range(2):
        t = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=mixed[h * 128 : (h + 1) * 128, :])
        nisa.dma_copy(dst=out[core * 256 + h * 128 : core * 256 + (h + 1) * 128, :], src=t)
    return out
