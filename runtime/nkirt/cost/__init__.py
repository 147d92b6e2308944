"""The cost model: per-target tables and the cost rule of every simulated instruction."""

from __future__ import annotations

from dataclasses import dataclass

from nkirt.cost import (
    collectives,  # noqa: F401  (registers the cross-core rules)
    sequencer,  # noqa: F401  (registers the register instructions' rules)
)
from nkirt.cost.dma import DmaPlan, dma_plan
from nkirt.cost.shapes import InstructionShape, OperandShape
from nkirt.cost.streaming import RULES
from nkirt.cost.tables import (
    GPSIMD_START,
    SCALAR_PIPELINE_LATENCY,
    TARGETS,
    VECTOR_STATIC_OVERHEAD,
    TargetTable,
)
from nkirt.cost.tensor import matmul_cycles, transpose_cycles

DMA_OPS = frozenset({"dma_copy", "dma_transpose", "dma_compute"})
TENSOR_OPS = frozenset({"nc_matmul", "nc_matmul_mx", "nc_transpose"})
#: Every instruction the simulator has a cost for; the neff reader rejects any other opcode.
OPCODES = frozenset(RULES) | DMA_OPS | TENSOR_OPS

#: Cycles from the end of an instruction's issue to its results being visible elsewhere.
PIPELINE_LATENCY = {
    "vector": VECTOR_STATIC_OVERHEAD,  # Hardware §5/§11 (ARCH2): static overhead, chained deps
    "scalar": SCALAR_PIPELINE_LATENCY,  # Hardware §6/§11 (PERF Opt #5a): 264 − MIN_II
    "gpsimd": GPSIMD_START,  # Hardware §7/§11 (B1ISA): GpSimd instruction start-up
    "tensor": 0,  # MM_INIT_LATENCY already bounds the MM turnaround (Hardware §4)
}


@dataclass(frozen=True)
class ComputeCost:
    """Timing of one compute-engine instruction, in ns.

    The engine is busy for `load_stationary_ns` (TensorE only; it may overlap the previous
    MultiplyMoving) then `busy_ns`; its results become visible `latency_ns` after that.
    """

    busy_ns: float
    latency_ns: float
    load_stationary_ns: float = 0.0


__all__ = [
    "OPCODES",
    "ComputeCost",
    "DmaPlan",
    "InstructionShape",
    "OperandShape",
    "TARGETS",
    "TargetTable",
    "compute_cost",
    "dma_plan",
]


def compute_cost(inst: InstructionShape, table: TargetTable) -> ComputeCost:
    """Cost of a Vector/Scalar/GpSimd/Tensor instruction on `table`'s target."""
    ghz = table.engine_ghz(inst.engine)
    latency = PIPELINE_LATENCY[inst.engine] / ghz
    if inst.engine == "tensor":
        if inst.op == "nc_transpose":
            return ComputeCost(transpose_cycles(inst, table) / ghz, latency)
        load_stationary, multiply_moving = matmul_cycles(inst, table)
        return ComputeCost(multiply_moving / ghz, latency, load_stationary / ghz)
    return ComputeCost(RULES[inst.op](inst, table) / ghz, latency)
