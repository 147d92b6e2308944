"""Semantics of the GpSimd pattern, select and gather instructions: iota, affine_select,
sequence_bounds, local_gather, nc_n_gather, nonzero_with_count."""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa import alu
from nkirt.isa.operands import dtype_of, param, rows
from nkirt.isa.registry import semantics

GPSIMD_CORE_PARTITIONS = 16
_PATTERN_DIMS = 4


def affine_values(pattern, partitions: int, offset: int, channel_multiplier: int) -> np.ndarray:
    """offset + partition * channel_multiplier + Σ index_k * step_k over a [[step, num], ...]
    pattern (≤ 4 dims), as int32 with wraparound; shape (partitions, Π num)."""
    pattern = [tuple(map(int, pair)) for pair in pattern]
    if len(pattern) > _PATTERN_DIMS:
        raise ValueError(f"affine pattern has {len(pattern)} dims, at most 4 allowed")
    values = np.zeros([num for _, num in pattern], dtype=np.int64)
    for axis, (step, num) in enumerate(pattern):
        shape = [1] * len(pattern)
        shape[axis] = num
        values = values + (np.arange(num, dtype=np.int64) * step).reshape(shape)
    channel = np.arange(partitions, dtype=np.int64) * int(channel_multiplier)
    total = int(offset) + channel[:, None] + values.reshape(1, -1)
    return alu.wrap32(total, signed=True)


@semantics("iota", reads_outputs=True)
def iota(ctx, ops, attrs):
    dst = ops["dst"]
    values = affine_values(
        param("pattern", ops, attrs),
        dst.shape[0],
        param("offset", ops, attrs, 0),
        param("channel_multiplier", ops, attrs, 0),
    )
    if values.size != dst.size:
        raise ValueError(
            f"iota: pattern has {values.shape[1]} elements per partition, dst has {rows(dst).shape[1]}"
        )
    return {
        "dst": dtypes.cast(values.astype(np.int32), dtype_of("dst", ops, attrs)).reshape(dst.shape)
    }


_INTEGER_COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater_equal": np.greater_equal,
    "greater": np.greater,
    "less_equal": np.less_equal,
    "less": np.less,
}


@semantics("affine_select")
def affine_select(ctx, ops, attrs):
    on_true = ops["on_true_tile"]
    cmp_op = attrs.get("cmp_op", "equal")
    if cmp_op not in _INTEGER_COMPARE:
        raise ValueError(f"affine_select: unsupported cmp_op {cmp_op!r}")
    values = affine_values(
        param("pattern", ops, attrs),
        on_true.shape[0],
        param("offset", ops, attrs, 0),
        param("channel_multiplier", ops, attrs),
    )
    keep = _INTEGER_COMPARE[cmp_op](values, 0).reshape(on_true.shape)
    true_dtype = dtype_of("on_true_tile", ops, attrs)
    dst_dtype = dtype_of("dst", ops, attrs, default=true_dtype)
    fill = np.float32(param("on_false_value", ops, attrs))
    if true_dtype == dst_dtype:
        return {"dst": np.where(keep, on_true, dtypes.cast(np.asarray(fill), dst_dtype))}
    return {"dst": np.where(keep, dtypes.to_fp32(on_true, true_dtype), fill)}


@semantics("sequence_bounds")
def sequence_bounds(ctx, ops, attrs):
    ids = rows(ops["segment_ids"])
    if ids.shape[0] != 1:
        raise ValueError(f"sequence_bounds: partition dim must be 1, got {ids.shape[0]}")
    ids = ids[0]
    n = ids.shape[0]
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    for i in range(n):
        starts[i] = i if i == 0 or ids[i] != ids[i - 1] else starts[i - 1]
    for i in range(n - 1, -1, -1):
        ends[i] = i + 1 if i == n - 1 or ids[i] != ids[i + 1] else ends[i + 1]
    padding = ids == 0
    starts[padding] = n
    ends[padding] = -1
    bounds = np.stack([starts, ends])[None].astype(np.int32)
    dst_dtype = dtype_of("dst", ops, attrs, default=dtype_of("segment_ids", ops, attrs))
    return {"dst": dtypes.cast(bounds, dst_dtype)}


@semantics("local_gather")
def local_gather(ctx, ops, attrs):
    src = rows(ops["src_buffer"])
    index = rows(ops["index"])
    per_index = int(param("num_elem_per_idx", ops, attrs, 1))
    if src.shape[0] != index.shape[0] or src.shape[0] % GPSIMD_CORE_PARTITIONS:
        raise ValueError(
            f"local_gather: src_buffer/index partitions {src.shape[0]}/{index.shape[0]} must "
            "match and be a multiple of 16"
        )
    valid = param("num_valid_indices", ops, attrs, None)
    valid = int(valid) if valid is not None else GPSIMD_CORE_PARTITIONS * index.shape[1]
    out = np.empty((src.shape[0], valid * per_index), dtype=src.dtype)
    lanes = np.arange(per_index)
    for start in range(0, src.shape[0], GPSIMD_CORE_PARTITIONS):
        core = slice(start, start + GPSIMD_CORE_PARTITIONS)
        offsets = index[core].astype(np.int64).flatten(order="F")[:valid]
        columns = (offsets[:, None] + lanes[None, :]).reshape(-1)
        out[core] = src[core][:, columns]
    return {"dst": out}


@semantics("nc_n_gather")
def nc_n_gather(ctx, ops, attrs):
    data = rows(ops["data"])
    indices = ops["indices"]
    flat = rows(indices).astype(np.int64)
    return {"dst": np.take_along_axis(data, flat, axis=1).reshape(indices.shape)}


@semantics("nonzero_with_count", reads_outputs=True)
def nonzero_with_count(ctx, ops, attrs):
    src = rows(ops["src"])
    dst = ops["dst"]
    out = rows(dst).copy()
    offset = int(param("index_offset", ops, attrs, 0))
    padding = int(param("padding_val", ops, attrs, -1))
    n = src.shape[1]
    for partition in range(0, src.shape[0], GPSIMD_CORE_PARTITIONS):
        positions = np.flatnonzero(src[partition] != 0)
        row = np.full(n + 1, padding, dtype=np.int64)
        row[: positions.size] = positions + offset
        row[n] = positions.size
        out[partition] = dtypes.cast(row, dtype_of("dst", ops, attrs))
    return {"dst": out.reshape(dst.shape)}
