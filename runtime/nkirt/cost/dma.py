"""DMA transfer plans: how one DMA instruction splits over the 16 DMA engines, and for how long.

A transfer costs a fixed trigger-to-start time (Hardware §9, DMABW: ≈1,300 ns; ≈600 ns with the
v3+ hardware DGE) and then, on every DMA engine it uses, its bytes at the engine bandwidth plus
`DMA_ELEMENT_OVERHEAD_BYTES` per contiguous DMA element (Hardware §9 efficiency curve). Engine
`k` moves the SBUF partitions 8k…8k+7 (Hardware §9, DMAOV); HBM-to-HBM copies split their bytes
evenly over all 16 engines. The executor turns the per-engine times into reservations of the
engines (shared by all DMA queues) and, on targets with a measured sustained rate, the HBM
bytes into a reservation of the core's HBM-side DMA rate (shared by everything).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from math import ceil, gcd

from nkirt.cost.shapes import InstructionShape
from nkirt.cost.tables import (
    DMA_ELEMENT_OVERHEAD_BYTES,
    DMA_ENGINES,
    DMA_FIXED_NS,
    HWDGE_FIXED_NS,
    PARTITIONS_PER_DMA_ENGINE,
    TargetTable,
)

# Hardware §9 (ARCH3, PERF Opt #10): DMA transposes reach up to 90 % of the copy throughput from
# HBM and 50 % SBUF-to-SBUF
TRANSPOSE_FROM_HBM_EFFICIENCY = 0.9
TRANSPOSE_FROM_SBUF_EFFICIENCY = 0.5
# Hardware §8 (ARCH4): collective-compute DMA runs at 50 % of the copy throughput before v4
COMPUTE_PRE_V4_EFFICIENCY = 0.5


@dataclass
class DmaPlan:
    """A static DMA instruction's fixed cost and per-engine work; chunks depend only on the
    first partition of the SBUF side, so they are cached per start partition."""

    fixed_ns: float
    bytes: int
    #: SBUF side: partitions moved (0 for HBM-to-HBM, split by bytes), their step, bytes and
    #: DMA elements per partition (for HBM-to-HBM: elements of the whole transfer).
    partitions: int
    partition_step: int
    partition_bytes: int
    partition_elements: int
    ns_per_byte: float
    #: Bytes read from or written to HBM (each HBM side counts): what the core's sustained DMA
    #: rate limits, where the target has one (tables.TRN1_SUSTAINED_DMA_GBPS).
    hbm_bytes: int = 0
    #: Engine time per DMA element (descriptor), in bytes (TargetTable.dma_element_overhead_bytes)
    element_overhead_bytes: float = DMA_ELEMENT_OVERHEAD_BYTES
    _cache: dict[int, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    _uniform: dict[int, float | None] = field(default_factory=dict)

    def uniform(self, first_partition: int) -> float | None:
        """The busy time of every engine when the transfer gives all 16 the same work."""
        if first_partition not in self._uniform:
            chunks = self.chunks(first_partition)
            busy = chunks[0][1] if len(chunks) == DMA_ENGINES else None
            self._uniform[first_partition] = busy if all(b == busy for _, b in chunks) else None
        return self._uniform[first_partition]

    def chunks(self, first_partition: int) -> tuple[tuple[int, float], ...]:
        """(DMA engine, busy ns) for every engine that moves part of this transfer."""
        cached = self._cache.get(first_partition)
        if cached is not None:
            return cached
        if self.partitions == 0:
            share = self.bytes / DMA_ENGINES
            elements = ceil(self.partition_elements / DMA_ENGINES)
            busy = (share + elements * self.element_overhead_bytes) * self.ns_per_byte
            chunks = tuple((engine, busy) for engine in range(DMA_ENGINES))
        else:
            per_partition = (
                self.partition_bytes + self.partition_elements * self.element_overhead_bytes
            )
            chunks = tuple(
                (engine, count * per_partition * self.ns_per_byte)
                for engine, count in _partitions_per_engine(
                    first_partition, self.partitions, self.partition_step
                )
            )
        self._cache[first_partition] = chunks
        return chunks


@cache
def _partitions_per_engine(first: int, partitions: int, step: int) -> tuple[tuple[int, int], ...]:
    """(DMA engine, partitions it moves) of a transfer of `partitions` SBUF partitions from
    `first` on, `step` apart, by engine (a program has few distinct ones)."""
    counts: dict[int, int] = {}
    for i in range(partitions):
        engine = (first + i * step) // PARTITIONS_PER_DMA_ENGINE
        counts[engine % DMA_ENGINES] = counts.get(engine % DMA_ENGINES, 0) + 1
    return tuple(sorted(counts.items()))


def dma_plan(inst: InstructionShape, table: TargetTable) -> DmaPlan:
    """The plan of one DMA instruction (dma_copy, dma_transpose, dma_compute) on `table`."""
    dst = inst.operands["dst"]
    sources = [o for o in inst.inputs() if o is not dst]
    src = sources[0] if sources else dst
    # casting DMAs move max(src, dst) bytes per element (src → fp32 → dst, Hardware §9)
    width = max([dst.itemsize] + [o.itemsize for o in sources])
    efficiency = 1.0
    if inst.op == "dma_transpose":
        transposed_from_hbm = not src.on_chip
        efficiency = (
            TRANSPOSE_FROM_HBM_EFFICIENCY if transposed_from_hbm else TRANSPOSE_FROM_SBUF_EFFICIENCY
        )
        run_sides = [dst]  # the engines write whole dst rows; reads are gathered at speed
    elif inst.op == "dma_compute":
        if table.nc_version < 4:
            efficiency = COMPUTE_PRE_V4_EFFICIENCY
        run_sides = [dst, *sources]
    else:
        run_sides = [dst, src]
    streams = len(sources) if inst.op == "dma_compute" else 1
    moved = dst.elements * width * max(1, streams)
    run = 0
    for side in run_sides:
        run = gcd(run, side.contiguous_run())
    sbuf_side = dst if dst.on_chip else (src if src.on_chip else None)
    fixed = DMA_FIXED_NS
    if inst.attrs.get("dge_mode") == "hwdge" and table.hwdge:
        fixed = HWDGE_FIXED_NS
    ns_per_byte = 1.0 / (table.dma_engine_bytes_per_ns * efficiency)
    hbm_bytes = sum(side.elements * side.itemsize for side in (dst, *sources) if not side.on_chip)
    if sbuf_side is None:
        return DmaPlan(
            fixed,
            moved,
            0,
            1,
            0,
            ceil(dst.elements / run),
            ns_per_byte,
            hbm_bytes,
            table.dma_element_overhead_bytes,
        )
    per_partition = sbuf_side.free_elems
    run = gcd(run, per_partition)
    return DmaPlan(
        fixed_ns=fixed,
        bytes=moved,
        partitions=sbuf_side.partitions,
        partition_step=sbuf_side.partition_step,
        partition_bytes=moved // sbuf_side.partitions,
        partition_elements=per_partition // run,
        ns_per_byte=ns_per_byte,
        hbm_bytes=hbm_bytes,
        element_overhead_bytes=table.dma_element_overhead_bytes,
    )
