"""Hardware numbers of each target (trn1 = NeuronCore-v2, trn2 = v3, trn3 = v4), with sources.

Every constant cites the section (Hardware §n of docs/sources.md, which links the public
documents) it comes from. Per-
instruction cycle counts that the docs give only for NeuronCore-v2 (Beta-1 formulas, MIN_II,
overheads) are applied to every generation in engine cycles of the executing engine (Hardware §14,
last bullet: "engine cycles" assumed to be the executing engine's clock).
"""

from __future__ import annotations

from dataclasses import dataclass

PARTITIONS = 128  # Hardware §2/§8: SBUF and PSUM have 128 partitions
PSUM_PARTITION_BYTES = 16 * 1024  # Hardware §3 (PSUM row): 8 banks × 2 KiB per partition, all gens
PSUM_BANK_BYTES = 2 * 1024  # Hardware §3 (PSUM row)
DMA_ENGINES = 16  # Hardware §3 (DMA engines / core) and §9
PARTITIONS_PER_DMA_ENGINE = (
    PARTITIONS // DMA_ENGINES
)  # Hardware §9: each engine serves 8 partitions

MIN_II = 64  # Hardware §11: min initiation interval of Vector/Scalar/GpSimd instructions (cycles)
VECTOR_STATIC_OVERHEAD = 100  # Hardware §5/§11 (ARCH2): static overhead of a VectorE instruction
# Hardware §6/§11 (PERF Opt #5a): dependent 1-element ScalarE instructions issue every 264 cycles;
# of that, MIN_II is the instruction itself, the rest is its pipeline latency.
SCALAR_DEPENDENT_II = 264
SCALAR_PIPELINE_LATENCY = SCALAR_DEPENDENT_II - MIN_II
GPSIMD_START = 150  # Hardware §7/§11 (B1ISA): start-up of a GpSimd instruction (cycles)
ACT_READ_ACCUMULATOR = 64  # Hardware §6/§11 (ARCH2): ActReadAccumulator read-out (ScalarE cycles)
WIDE_STRIDE_BYTES = 16  # Hardware §8 (ARCH2): innermost stride > 16 B halves SBUF access bandwidth
MM_INIT_LATENCY = 64  # Hardware §4/§11 (ARCH2, PERF): MultiplyMoving turnaround (TensorE cycles)
FP32_MATMUL_FACTOR = 4  # Hardware §4 (ARCH2, B1ISA): fp32 matmul ≈ 4× bf16
LOAD_STATIONARY_SPEEDUP = 4  # Hardware §4/§11 (ARCH2): LoadStationary up to 4× faster than an MM
DMA_FIXED_NS = 1300.0  # Hardware §9/§11 (DMABW): descriptor setup + sync + semaphore-to-start
HWDGE_FIXED_NS = 600.0  # Hardware §9/§11 (ARCH3, DGE): one hardware-DGE DMA instruction
# Hardware §9 (DMABW efficiency curve): below 256 B per partition a transfer is "severely overhead-
# bound", 2 KiB is the recommended minimum and 4 KiB saturates. Charging each contiguous DMA
# element the time of 256 extra bytes reproduces that curve: 50 % at 256 B, 89 % at 2 KiB,
# 94 % at 4 KiB of the engine bandwidth.
DMA_ELEMENT_OVERHEAD_BYTES = 256
# Hardware §12.1/§12.2: the sustained HBM-side DMA rate of one Trn1 NeuronCore, *measured*, not
# documented. The four published matmul tutorial kernels are DMA-bound (§12.2: DMA active
# 95.7–99.9 % for three of them) and their latencies are the bytes they move at 103.1, 103.4,
# 104.9 and 105.9 GB/s (payloads of 256 B to 4 KiB per partition); pooled (Σ bytes / Σ time)
# that is 104.1 GB/s, 38 % of the 16 engines' table peak (272 GB/s) and 25 % of the core's
# share of HBM (410 GB/s, §1/§3). Leaving any one kernel out changes it by < 1 %
# (docs/cost-model.md, calibration notes). No such measurement exists for v3/v4.
TRN1_SUSTAINED_DMA_GBPS = 104.1

# Time a trn2 DMA engine spends per descriptor (DMA element: one contiguous run of one
# partition) besides moving its bytes, *measured*: the published trn2 4096³ bf16 matmul ladder
# (neuron-agentic-development, example-bounds-analysis.md) gives DMA active times of 7,906,
# 1,325 and 819 µs for 1,207.7 / 201.3 / 201.3 MB in 1,473,920 / 294,912 / 114,688 descriptors
# (256 B lhsT tiles, 1 KiB rhs tiles and stores, 2 KiB row loads). Over the 16 engines at
# 27.2 B/ns that leaves 55.7, 46.8 and 49.7 ns per descriptor; pooled (Σ overhead time ÷
# Σ descriptors per engine) 53.9 ns, 47.6–55.3 ns leaving any one kernel out
# (docs/cost-model.md). It is 1,466 bytes of engine time: 15 % of the engine rate at 256 B,
# 58 % at 2 KiB, 74 % at 4 KiB, the documented efficiency curve's shape ("severely
# overhead-bound" below 256 B, "≥ 4 KiB" to saturate) with the measured scale.
TRN2_DMA_DESCRIPTOR_NS = 53.9

# TensorE dI/dt throttling on Trn2 and Trn3 (Neuron Explorer's Tensor Engine throttling
# explainer, dev-tools release notes 2.32): TensorE starts at about 50 % of its peak rate and
# ramps to full over about 3 µs; when its utilisation falls below 50 % in any ~3 µs window
# the cap comes back.
THROTTLE_START = 0.5
THROTTLE_RAMP_NS = 3000.0
THROTTLE_WINDOW_NS = 3000.0


@dataclass(frozen=True)
class TargetTable:
    """The numbers of one NeuronCore generation that the memory model and the costs use."""

    name: str
    nc_version: int
    tensor_ghz: float
    vector_ghz: float
    scalar_ghz: float
    gpsimd_ghz: float
    sbuf_partition_bytes: int
    dma_engine_bytes_per_ns: float
    #: VectorE performance modes for 2-byte float operands (Hardware §5, ARCH3).
    vector_perf_modes: bool
    #: Dtypes that the Vector/Scalar fast modes accept (Hardware §3 datapath rows).
    fast_mode_dtypes: frozenset[str]
    #: ScalarE 2× mode for tensor_copy / tensor_scalar (Hardware §6: v4 only).
    scalar_2x_mode: bool
    #: TensorE double_row FP8 mode, 2× throughput (Hardware §4: v3+).
    double_row_fp8: bool
    #: Hardware DGE block present (Hardware §3 HW DGE row, §9).
    hwdge: bool
    #: Measured sustained rate (GB/s = B/ns) of all DMA traffic to and from HBM of one core,
    #: shared by every queue and engine; None where no measurement exists.
    dma_sustained_gbps: float | None = None
    #: Measured engine time per DMA descriptor (ns) besides its bytes; None: the documented
    #: efficiency curve's DMA_ELEMENT_OVERHEAD_BYTES.
    dma_descriptor_ns: float | None = None
    #: HBM bandwidth of one HBM stack, GB/s (Explorer's `hbm_ddr_bandwidth`, the MBU
    #: denominator): the chip's HBM bandwidth over its stacks.
    hbm_stack_gbps: float = 0.0
    #: NeuronCore base clock (GHz) of Explorer's `neuroncore_cycle_count`; None if unstated.
    base_ghz: float | None = None
    #: TensorE dI/dt throttling (Trn2, Trn3): the rate cap of THROTTLE_* applies.
    tensor_throttle: bool = False
    #: Hardware §8 (ARCH2): on v2 VectorE and GpSimd cannot access SBUF at the same time.
    sbuf_vector_gpsimd_exclusive: bool = False
    #: Hardware §8 (ARCH2): on v2 VectorE and ScalarE cannot access PSUM at the same time.
    psum_vector_scalar_exclusive: bool = False
    #: Hardware §8 (ARCH3): from v3 VectorE and ScalarE access PSUM in parallel if different banks.
    psum_vector_scalar_same_bank_exclusive: bool = False

    @property
    def dma_element_overhead_bytes(self) -> float:
        """Engine time per DMA descriptor, in bytes of the engine's rate."""
        if self.dma_descriptor_ns is not None:
            return self.dma_descriptor_ns * self.dma_engine_bytes_per_ns
        return DMA_ELEMENT_OVERHEAD_BYTES

    def engine_ghz(self, engine: str) -> float:
        return {
            "tensor": self.tensor_ghz,
            "vector": self.vector_ghz,
            "scalar": self.scalar_ghz,
            "gpsimd": self.gpsimd_ghz,
        }[engine]

    @property
    def branch_ns(self) -> float:
        """One compare-and-branch of a dynamic loop on an engine sequencer: MIN_II cycles of
        the slowest engine clock (no published figure; cost/sequencer.py)."""
        return MIN_II / min(self.vector_ghz, self.scalar_ghz, self.gpsimd_ghz)


_TWO_BYTE_FLOATS = frozenset({"bfloat16", "float16"})

TARGETS: dict[str, TargetTable] = {
    "trn1": TargetTable(
        name="trn1",
        nc_version=2,
        tensor_ghz=2.8,  # Hardware §3 (ARCH2 table)
        vector_ghz=1.12,  # Hardware §3 (ARCH2 table)
        scalar_ghz=1.4,  # Hardware §3 (ARCH2 table)
        gpsimd_ghz=1.4,  # Hardware §3 (ARCH2 table)
        sbuf_partition_bytes=192 * 1024,  # Hardware §3: 24 MiB = 128 × 192 KiB
        dma_engine_bytes_per_ns=17.0,  # Hardware §3 (DMAOV, DMABW table)
        vector_perf_modes=False,  # Hardware §5: perf modes are a v3 feature
        fast_mode_dtypes=frozenset(),
        scalar_2x_mode=False,
        double_row_fp8=False,  # Hardware §4: double FP8 is v3+
        hwdge=False,  # Hardware §3: no HW DGE on v2
        dma_sustained_gbps=TRN1_SUSTAINED_DMA_GBPS,  # Hardware §12.1/§12.2, measured (above)
        hbm_stack_gbps=820 / 2,  # Trainium: 820 GB/s over 2 HBM stacks
        base_ghz=1.4,  # Explorer schema, neuroncore_cycle_count: "Trainium1 is 1.4 GHz"
        sbuf_vector_gpsimd_exclusive=True,  # Hardware §8 (ARCH2): shared SBUF port, serialised
        psum_vector_scalar_exclusive=True,  # Hardware §8 (ARCH2): shared PSUM port, serialised
    ),
    "trn2": TargetTable(
        name="trn2",
        nc_version=3,
        tensor_ghz=2.4,  # Hardware §3 (ARCH3 table)
        vector_ghz=0.96,  # Hardware §3 (ARCH3 table)
        scalar_ghz=1.2,  # Hardware §3 (ARCH3 table)
        gpsimd_ghz=1.2,  # Hardware §3 (ARCH3 table)
        sbuf_partition_bytes=224 * 1024,  # Hardware §3: 28 MiB = 128 × 224 KiB
        # DMA overview: 27.2 GB/s per engine; Neuron Explorer's `dma_ddr_bandwidth` for a trn2
        # NeuronCore is 435 GB/s = 16 × 27.2 (the DMABW table's 23 B/ns = 368 GB/s is lower)
        dma_engine_bytes_per_ns=27.2,
        vector_perf_modes=True,  # Hardware §5 (ARCH3 performance mode)
        fast_mode_dtypes=_TWO_BYTE_FLOATS,  # Hardware §3: VectorE 512 wide for BF16/FP16 on v3
        scalar_2x_mode=False,
        double_row_fp8=True,  # Hardware §4 (ARCH3)
        hwdge=True,  # Hardware §3: 2 HW DGE instances
        tensor_throttle=True,  # Explorer throttling explainer: Trn2 and Trn3
        dma_descriptor_ns=TRN2_DMA_DESCRIPTOR_NS,  # measured (above)
        hbm_stack_gbps=2900 / 4,  # Trainium2: 2.9 TB/s over 4 HBM stacks
        base_ghz=1.2,  # Explorer schema, neuroncore_cycle_count: "Trainium2 is 1.2 GHz"
        # Hardware §8 (ARCH3): v3 lifts both v2 port restrictions (PSUM parallel on other banks)
        sbuf_vector_gpsimd_exclusive=False,
        psum_vector_scalar_exclusive=False,
        psum_vector_scalar_same_bank_exclusive=True,  # Hardware §8: "parallel if different banks"
    ),
    "trn3": TargetTable(
        name="trn3",
        nc_version=4,
        tensor_ghz=2.4,  # Hardware §3 (ARCH4 table)
        vector_ghz=1.2,  # Hardware §3 (ARCH4 table)
        scalar_ghz=1.2,  # Hardware §3 (ARCH4 table)
        gpsimd_ghz=1.2,  # Hardware §3 (ARCH4 table)
        sbuf_partition_bytes=256 * 1024,  # Hardware §3: 32 MiB = 128 × 256 KiB
        dma_engine_bytes_per_ns=33.0,  # Hardware §3 (DMAOV, DMABW table)
        # Hardware §3: v4 VectorE has the v3 datapath (512 BF16/FP16/FP8, 256 other), so the v3
        # performance modes are assumed to carry over, extended to FP8 as the datapath row says.
        vector_perf_modes=True,
        fast_mode_dtypes=_TWO_BYTE_FLOATS
        | frozenset({"float8_e4m3", "float8_e4m3fn", "float8_e5m2"}),
        scalar_2x_mode=True,  # Hardware §6: v4 native tensor_scalar/tensor_copy 2× bf16/fp16 mode
        double_row_fp8=True,  # Hardware §4 (ARCH4 keeps v3 double FP8; MX adds 4×)
        hwdge=True,  # Hardware §3: HW DGE present on v4
        tensor_throttle=True,  # Explorer throttling explainer: Trn2 and Trn3
        hbm_stack_gbps=4900 / 4,  # Trainium3: 4.9 TB/s over 4 HBM stacks
        # Hardware §8: lifted on v3 (ARCH3); ARCH4 restates no restriction, so v4 keeps v3's ports
        sbuf_vector_gpsimd_exclusive=False,
        psum_vector_scalar_exclusive=False,
        psum_vector_scalar_same_bank_exclusive=True,  # as v3 (Hardware §8)
    ),
}
