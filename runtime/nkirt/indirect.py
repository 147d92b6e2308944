"""Tensor indirection (`.indirect(index)` on a compute operand, NeuronCore-v4): the column
gather (an input) or scatter (an output) of an on-chip operand, whose free-dimension offsets
the engine reads from an SBUF index tile when the instruction runs.

An indirect operand is the pattern [partition pair, (step, n)] with the dynamic offset
{"kind": "indirect", "index": OPERAND, "dim": 1, "unit": u, "extent": f}: element [p, i] is
storage element `offset + p * partition step + o_i * u`, where `o_i` is the i-th offset of the
(P, K) index tile in the engine's snake order and must lie in 0..f-1 (docs/neff-format.md).
"""

from __future__ import annotations

import numpy as np

from nkirt.errors import NeffError
from nkirt.memory import _MARK, _MARK_DTYPES

#: Instructions with tensor-indirection operands (the checks name the operands per instruction).
OPCODES = frozenset(
    {
        "nc_matmul",
        "nc_matmul_mx",
        "tensor_tensor",
        "tensor_scalar",
        "tensor_scalar_reduce",
        "tensor_scalar_cumulative",
        "tensor_reduce",
        "tensor_copy",
        "tensor_copy_predicated",
        "activation",
        "activation_reduce",
        "activate2",
        "exponential",
    }
)


def group_size(engine: str) -> int:
    """Partitions of the index tile the engine reads one offset column from: 32 on the Tensor
    engine, 16 on Vector, Scalar and GpSimd."""
    return 32 if engine == "tensor" else 16


def snake_offsets(index: np.ndarray, count: int, group: int) -> np.ndarray:
    """The first `count` offsets of a (P, K) index tile in snake order: offset i is
    `index[i % G, i // G]` within a group of G partitions, whose K columns hold G·K offsets;
    the next offsets come from the next group of G partitions."""
    parts, cols = index.shape
    i = np.arange(count)
    per_group = group * cols
    part = (i // per_group) * group + i % group
    col = (i // group) % cols
    if count and int(part.max()) >= parts:
        first = int(np.argmax(part >= parts))
        raise IndexError(
            f"offset {first} of {count} is read from partition {int(part[first])} of a "
            f"{parts}-partition index tile (groups of {group} partitions)"
        )
    return index[part, col].astype(np.int64)


def elements(ap, byte: int, offsets: np.ndarray) -> np.ndarray:
    """Flat element indices (in the AP's dtype) of an indirect AP's elements in its on-chip
    buffer, shape (P, count): element [0, 0] of the viewed tensor at `byte`."""
    isz = ap.itemsize
    rows = np.arange(ap.nums[0], dtype=np.int64) * (ap.part_step * ap.partition_bytes // isz)
    return byte // isz + rows[:, None] + offsets[None, :] * ap.dynamic_unit


def check_operand(op: str, operands: dict, operand: dict, tensors: dict, where: str) -> None:
    """The NEFF reader's check of an indirect operand: a 2-D on-chip operand of a compute
    instruction that takes one, indexed by an int32/uint32 SBUF tile with its partitions."""
    dyn = operand["dynamic"]
    if op not in OPCODES:
        raise NeffError(f"{where}: {op} has no tensor-indirection operand")
    tensor = tensors[operand["tensor"]]
    unit, extent = dyn.get("unit"), dyn.get("extent")
    if (
        not tensor.on_chip
        or len(operand["pattern"]) != 2
        or dyn.get("dim") != 1
        or not isinstance(unit, int)
        or not isinstance(extent, int)
        or unit < 0
        or extent < 1
    ):
        raise NeffError(
            f"{where}: an indirect operand is a 2-D on-chip pattern with dim 1, a unit >= 0 "
            "and an extent >= 1"
        )
    ix = operands.get(dyn.get("index"))
    ix_tensor = tensors.get(ix["tensor"]) if isinstance(ix, dict) and "pattern" in ix else None
    if (
        ix_tensor is None
        or ix_tensor.buffer != "sbuf"
        or ix.get("dtype", ix_tensor.dtype) not in ("int32", "uint32")
        or "dynamic" in ix
        or len(ix["pattern"]) != 2
        or ix["pattern"][0][1] != operand["pattern"][0][1]
    ):
        raise NeffError(
            f"{where}: index operand {dyn.get('index')!r} must be a 2-D int32/uint32 SBUF tile "
            "with the operand's partitions"
        )


def mark_psum_writer(memory, ap, elements: np.ndarray, by_tensor: bool) -> None:
    """Record whether TensorE wrote the scattered PSUM elements last (what an accumulating
    matmul onto them checks), as `Memory.mark_psum_writer` does for a strided view."""
    memory.by_tensor.clear()
    memory._touch("by_tensor", None)
    marks = memory.psum_by_tensor.view(_MARK_DTYPES[ap.itemsize])
    marks[elements] = _MARK[ap.itemsize] if by_tensor else 0
