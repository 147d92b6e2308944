"""Variable-size collectives and permutes between the two cores of an LNC=2 launch. Core c's
flat `src` is row c of `a`; its `dst` is row c of `out`, filled with its own `src` first, so
the elements no chunk reaches keep a known value."""

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

GROUP = [[0, 1]]


def _fill(dst, src):
    """dst <- src through two staging buffers: three dependent DMAs (src ready late)."""
    one = nl.ndarray(src.shape, src.dtype, buffer=nl.private_hbm)
    two = nl.ndarray(src.shape, src.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=one, src=src)
    nisa.dma_copy(dst=two, src=one)
    nisa.dma_copy(dst=dst, src=two)


@nki.jit
def a2av(a, meta):
    """meta[c] is core c's (3, 2) uint32 counts/displacements; returns out and the metadata
    after the collective (row 2: the counts each core received)."""
    core = nl.program_id()
    N = a.shape[1]
    out = nl.ndarray((2, N), a.dtype, buffer=nl.shared_hbm)
    after = nl.ndarray(meta.shape, meta.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), meta.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=m, src=meta[core])
    _fill(out[core], a[core])
    ncc.all_to_all_v(
        srcs=[a[core]], dsts=[out[core]], replica_group=ncc.ReplicaGroup(GROUP), metadata_tensor=m
    )
    nisa.dma_copy(dst=after[core], src=m)
    return out, after


@nki.jit
def a2av_split(a, meta):
    """The same exchange as `a2av`, prepared before `dst` is filled and then triggered."""
    core = nl.program_id()
    N = a.shape[1]
    out = nl.ndarray((2, N), a.dtype, buffer=nl.shared_hbm)
    after = nl.ndarray(meta.shape, meta.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), meta.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=m, src=meta[core])
    prepared = ncc.all_to_all_v_prepare(
        srcs=[a[core]], dsts=[out[core]], replica_group=ncc.ReplicaGroup(GROUP), metadata_tensor=m
    )
    _fill(out[core], a[core])
    ncc.all_to_all_v_trigger(prepared)
    nisa.dma_copy(dst=after[core], src=m)
    return out, after


@nki.jit
def agv(a, meta):
    core = nl.program_id()
    N = a.shape[1]
    out = nl.ndarray((2, N), a.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), meta.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=m, src=meta[core])
    nisa.dma_copy(dst=out[core], src=a[core])
    handle = ncc.all_gather_v_prepare(
        srcs=[a[core]],
        dsts=[out[core]],
        replica_group=ncc.ReplicaGroup(GROUP),
        metadata_tensor=m,
        recv_counts_known=True,
    )
    ncc.all_gather_v_trigger(handle)
    return out


@nki.jit
def swap(a):
    """Each core sends its [128, F] rows to the other with an explicit permute, and both
    rings (plain and reducing) through the implicit forms; the ring step's rank picks rows."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((3, 256, F), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, F), a.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=mine, src=a[core * 128 : (core + 1) * 128, :])
    got = nl.ndarray((128, F), a.dtype, buffer=nl.private_hbm)
    ncc.collective_permute(srcs=[mine], dsts=[got], source_target_pairs=[(0, 1), (1, 0)])
    nisa.dma_copy(dst=out[0, core * 128 : (core + 1) * 128, :], src=got)
    ring = nl.ndarray((128, F), a.dtype, buffer=nl.private_hbm)
    ncc.collective_permute_implicit(
        srcs_by_channel=[[mine]], dsts_by_channel=[[ring]], replica_group=ncc.ReplicaGroup(GROUP)
    )
    step = ncc.collective_permute_implicit_current_processing_rank_id(
        iteration_id=1, replica_group=ncc.ReplicaGroup(GROUP)
    )
    nisa.dma_copy(dst=out[1, step * 128 : (step + 1) * 128, :], src=ring)
    total = nl.ndarray((128, F), a.dtype, buffer=nl.private_hbm)
    ncc.collective_permute_implicit_reduce(
        srcs0_by_channel=[[mine]],
        srcs1_by_channel=[[got]],
        dsts_by_channel=[[total]],
        replica_group=ncc.ReplicaGroup(GROUP),
        op=nl.maximum,
    )
    nisa.dma_copy(dst=out[2, core * 128 : (core + 1) * 128, :], src=total)
    return out
