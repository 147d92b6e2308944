"""The compiler's description of each target: memory sizes and placement rules, with sources.

Section numbers are Hardware §n of docs/sources.md (Language §n where marked), which links the
public documents. Every hardware number the verifier, the passes and the backend use lives here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

PARTITIONS = 128  # Hardware §2/§8: SBUF and PSUM have 128 partitions
PSUM_BANK_BYTES = 2 * 1024  # Hardware §3 (PSUM row): a bank is 2 KiB (512 fp32) per partition
PSUM_BANKS = 8  # Hardware §3 (PSUM row): 8 banks per partition
PSUM_PARTITION_BYTES = PSUM_BANKS * PSUM_BANK_BYTES  # Hardware §3: 16 KiB per partition
DMA_QUEUES = 16  # Hardware §3 (DMA queues per engine: 16, IDs 0–15) and §9
# ISA (`NkiTensor.indirect`, NeuronCore-v4): tensor-indirection offsets are read from groups
# of 16 index partitions on Vector/Scalar/GpSimd, 32 on the Tensor engine; each index tile
# starts on a quadrant boundary (32 partitions)
INDIRECTION_GROUP = 16
INDIRECTION_GROUP_TENSOR = 32
QUADRANT = 32
# The docs give no minimum free-dim alignment (Language §5.3: `sbuf_min_align`,
# `psum_min_align` "not stated"); nkic aligns every placement to 4 bytes, one fp32 element.
ALIGN_BYTES = 4


@dataclass(frozen=True)
class Target:
    """What allocation and scheduling need to know about one NeuronCore generation."""

    name: str
    #: Usable SBUF bytes per partition for kernel tensors.
    sbuf_partition_bytes: int
    psum_partition_bytes: int = PSUM_PARTITION_BYTES
    psum_bank_bytes: int = PSUM_BANK_BYTES
    partitions: int = PARTITIONS
    dma_queues: int = DMA_QUEUES
    #: PSUM banks one matmul output may span: one on v2/v3 (N ≤ 512 fp32); all eight on v4
    #: (N ≤ 4096 fp32 / 8192 bf16) — ISA §5.2, Hardware §4.
    matmul_psum_banks: int = 1
    #: Logical-core (LNC) degrees a launch may use: LNC=2 fuses two physical cores that share
    #: one HBM, on trn2 and trn3 only (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/
    #: nki/get-started/about/lnc.html).
    lnc_degrees: tuple[int, ...] = (1,)


TARGETS: dict[str, Target] = {
    # Hardware §3: 192 KiB − 16 KiB compiler-reserved = 176 KiB (direct-allocation guide), which is
    # exactly the 180,224 B of the nkipy target_info row.
    "trn1": Target("trn1", sbuf_partition_bytes=180_224),
    # Hardware §3: NeuronCore-v3 SBUF is 28 MiB, 224 KiB per partition (Trainium2 architecture
    # guide); less the 16 KiB reserve and 8 bytes = 212,984 B, the nkipy target_info row and the
    # budget the NKI Library's own kernels compute (`224 * 1024 - 16384 - 8`, then their own
    # margins). The docs state no usable size for v3 or v4.
    "trn2": Target("trn2", sbuf_partition_bytes=212_984, lnc_degrees=(1, 2)),
    # Hardware §3: NeuronCore-v4 SBUF is 32 MiB, 256 KiB per partition (Trainium3 architecture
    # guide); the same reserve as v3 leaves 245,752 B, the nkipy target_info row.
    "trn3": Target(
        "trn3", sbuf_partition_bytes=245_752, matmul_psum_banks=PSUM_BANKS, lnc_degrees=(1, 2)
    ),
}


#: Target names, oldest generation first (so "at least trn2" is an index comparison).
TARGET_NAMES: tuple[str, ...] = tuple(TARGETS)


def target(name: str) -> Target:
    return TARGETS[name]


def start_partitions(num_partitions: int) -> tuple[int, ...]:
    """Legal start partitions of a tensor with `num_partitions` partitions (Hardware §8)."""
    if num_partitions > 64:
        return (0,)
    if num_partitions > 32:
        return (0, 64)
    return (0, 32, 64, 96)
