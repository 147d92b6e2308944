"""Two cores exchanging data: through shared HBM ordered by a barrier, and by sendrecv."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def all_reduce_hbm(a):
    """Each core sums its half of the rows of a [2*128, F] input; both cores then hold, and
    write out, the sum of the two halves (an all-reduce of two ranks)."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((2 * 128, F), a.dtype, buffer=nl.shared_hbm)
    partial = nl.ndarray((2 * 128, F), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 128 : (core + 1) * 128, :])
    nisa.dma_copy(dst=partial[core * 128 : (core + 1) * 128, :], src=mine)
    nisa.core_barrier(data=partial, cores=(0, 1))
    theirs = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    other = 1 - core
    nisa.dma_copy(dst=theirs, src=partial[other * 128 : (other + 1) * 128, :])
    total = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=mine, data2=theirs, op=nl.add)
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=total)
    return out


@nki.jit
def ring_sum(a):
    """A ring of sendrecv steps: each core passes its running tile to the other and adds what
    it receives, three times; core c starts from rows c*128.."""
    core = nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((2 * 128, F), a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=a[core * 128 : (core + 1) * 128, :])
    for _ in nl.static_range(3):
        got = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=acc, dst=got, send_to_rank=1 - core, recv_from_rank=1 - core, pipe_id=0)
        nxt = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=nxt, data1=acc, data2=got, op=nl.add)
        acc = nxt
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=acc)
    return out


@nki.jit
def doubled_in_place(a):
    """Each core doubles its half of the rows of the input in place; after a barrier on the
    input (an HBM tensor both cores share) each core adds the other core's doubled half."""
    core, other = nl.program_id(), 1 - nl.program_id()
    F = a.shape[1]
    out = nl.ndarray((2 * 128, F), a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 128 : (core + 1) * 128, :])
    nisa.tensor_tensor(dst=mine, data1=mine, data2=mine, op=nl.add)
    nisa.dma_copy(dst=a[core * 128 : (core + 1) * 128, :], src=mine)
    nisa.core_barrier(data=a, cores=(0, 1))
    theirs = nl.ndarray((128, F), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=theirs, src=a[other * 128 : (other + 1) * 128, :])
    nisa.tensor_tensor(dst=mine, data1=mine, data2=theirs, op=nl.add)
    nisa.dma_copy(dst=out[core * 128 : (core + 1) * 128, :], src=mine)
    return out
