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

No published measurement of either exists; like every DMA in the model, the two cores'
transfers do not compete with each other's HBM traffic.
"""

from __future__ import annotations

from nkirt.cost.shapes import InstructionShape
from nkirt.cost.streaming import rule
from nkirt.cost.tables import DMA_ENGINES, DMA_FIXED_NS, MIN_II, TargetTable


@rule("core_barrier", "sendrecv")
def _issue(inst: InstructionShape, table: TargetTable) -> float:
    return MIN_II


def exchange_ns(op: str, nbytes: int, table: TargetTable) -> float:
    """Time from both cores having issued `op` to its completion on both."""
    if op == "core_barrier":
        return DMA_FIXED_NS
    return DMA_FIXED_NS + nbytes / (table.dma_engine_bytes_per_ns * DMA_ENGINES)
