"""Costs of the instructions that meet the other core of an LNC=2 launch.

Each core issues the instruction on its engine like any GpSimd instruction (MIN_II cycles);
the exchange itself starts when both cores have issued it and takes `exchange_ns`:

* `core_barrier`: each core writes a semaphore on its peer, then waits for the peer's write
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.core_barrier.html).
  The write is a 4-byte DMA; it is charged one DMA transfer's fixed cost (descriptor setup,
  sync and semaphore-to-start, DMA_FIXED_NS).
* `sendrecv`: a DMA from this core's SBUF to the peer's
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.sendrecv.html):
  the fixed cost plus the bytes over the 16 DMA engines at their documented rate.

* `nki.collectives` between the two cores (all_reduce, all_gather, reduce_scatter,
  all_to_all; https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.collectives.html):
  the fixed cost plus the bytes one core sends to the other over the 16 DMA engines; the
  reducing ones at half that rate before NeuronCore-v4, whose DMA engines reduce at full copy
  throughput while earlier collective-compute engines reach 50 % (Hardware §8, ARCH4).

* The variable-size forms (`all_to_all_v`, `all_gather_v`;
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.collectives.all_to_all_v.html)
  move the elements their metadata counts; before moving they set up from the metadata, which
  we charge one DMA fixed cost (a round trip that reads the counts). Split into prepare and
  trigger (NKI 0.7, `..._prepare` / `..._trigger`), the setup runs at the prepare, ahead of
  the data ("lets the setup run ahead and overlap with unrelated compute"): the trigger then
  pays only the movement, and waits for the setup if it has not completed.
* `collective_permute` (and the ring forms, which between two cores are a swap) moves each
  source core's tensor to its target; `collective_permute_implicit_reduce` sends the
  reduction of two tensors, charged like the other reducing collectives.

No published measurement of any of them exists.
"""

from __future__ import annotations

from nkirt.cost.shapes import InstructionShape
from nkirt.cost.streaming import rule
from nkirt.cost.tables import DMA_ENGINES, DMA_FIXED_NS, MIN_II, TargetTable
from nkirt.roles import CROSS_CORE, PREPARES


@rule(*sorted(CROSS_CORE | PREPARES))
def _issue(inst: InstructionShape, table: TargetTable) -> float:
    return MIN_II


#: The variable-size collectives, which set up from their metadata before moving data.
V_COLLECTIVES = ("all_to_all_v", "all_gather_v")
REDUCING = ("all_reduce", "reduce_scatter", "collective_permute_reduce")


def exchange_ns(op: str, nbytes: int, table: TargetTable, prepared: bool = False) -> float:
    """Time from both cores having issued `op` to its completion on both; `nbytes` is what
    one core sends to the other; `prepared`: a trigger whose setup ran at its prepare."""
    if op == "core_barrier":
        return DMA_FIXED_NS
    moving = nbytes / (table.dma_engine_bytes_per_ns * DMA_ENGINES)
    if op in REDUCING and table.nc_version < 4:
        moving *= 2  # the DMA engines' compute runs at half their copy rate before v4
    setup = DMA_FIXED_NS if op in V_COLLECTIVES and not prepared else 0.0
    return setup + DMA_FIXED_NS + moving
