"""TensorE costs: nc_matmul as LoadStationary + MultiplyMoving, and TensorE transposes."""

from __future__ import annotations

from math import ceil

from nkirt.cost.shapes import InstructionShape
from nkirt.cost.tables import (
    FP32_MATMUL_FACTOR,
    LOAD_STATIONARY_SPEEDUP,
    MM_INIT_LATENCY,
    TargetTable,
)

FP8 = frozenset({"float8_e4m3", "float8_e4m3fn", "float8_e5m2"})
FULL_PRECISION = frozenset({"float32"})  # tfloat32 runs at the bf16 rate (Hardware §3 dense rows)


def _precision_factor(inst: InstructionShape, table: TargetTable) -> int:
    """Hardware §4: fp32 ≈ 4× bf16; v3+ transpose mode is 2× faster for fp32 (ARCH3); the
    is_*_onezero hints make fp32 up to 2× faster (ISA §5.2)."""
    sides = [inst.operands[n] for n in ("stationary", "moving", "data") if n in inst.operands]
    if not any(o.dtype in FULL_PRECISION for o in sides):
        return 1
    transpose = inst.op == "nc_transpose" or inst.attrs.get("is_transpose")
    if transpose and table.nc_version >= 3:
        return FP32_MATMUL_FACTOR // 2
    if inst.attrs.get("is_stationary_onezero") or inst.attrs.get("is_moving_onezero"):
        return FP32_MATMUL_FACTOR // 2
    return FP32_MATMUL_FACTOR


def matmul_cycles(inst: InstructionShape, table: TargetTable) -> tuple[int, int]:
    """(LoadStationary, MultiplyMoving) TensorE cycles of one nc_matmul / nc_matmul_mx.

    MM = max(N, MM_INIT_LATENCY) with N the moving free size (Hardware §4, ARCH2); LS loads the
    stationary's M columns up to 4× faster than an MM of the same free size, so
    max(M, MM_INIT_LATENCY) / 4 (Hardware §4 fast LoadStationary; PERF: 128/4 = 32 cycles).
    double_row FP8 (v3+) streams [K, 2, N] in the time of [K, N] (Hardware §4); MX packs 4
    elements per partition and runs at 4× the bf16 rate, i.e. the same cycles per word.
    """
    stationary = inst.operands["stationary"]
    moving = inst.operands["moving"]
    m, n = stationary.free_elems, moving.free_elems
    double_row = inst.attrs.get("perf_mode") == "double_row"
    if double_row and table.double_row_fp8 and {stationary.dtype, moving.dtype} <= FP8:
        m, n = ceil(m / 2), ceil(n / 2)
    factor = _precision_factor(inst, table)
    multiply_moving = max(n, MM_INIT_LATENCY) * factor
    load_stationary = ceil(max(m, MM_INIT_LATENCY) / LOAD_STATIONARY_SPEEDUP) * factor
    return load_stationary, multiply_moving


def transpose_cycles(inst: InstructionShape, table: TargetTable) -> int:
    """Hardware §11 (B1ISA): TensorE nc_transpose of [P, F] costs max(P, min(64, F)) back-to-back."""
    data = inst.operands["data"]
    cycles = max(data.partitions, min(MM_INIT_LATENCY, data.free_elems))
    return cycles * _precision_factor(inst, table)
