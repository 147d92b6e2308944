"""Semantics of the search instructions: the top-8 family (max8, nc_find_index8,
nc_match_replace8) and topk."""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa.operands import dtype_of, fp32, from_bits, param, rows
from nkirt.isa.registry import semantics

SEARCH_WIDTH = 8


NOT_FOUND = -1  # all ones once truncated to the index dtype


def _indices(found: np.ndarray, dtype_name: str) -> np.ndarray:
    return from_bits(found.astype(np.uint64), dtype_name)


@semantics("max8")
def max8(ctx, ops, attrs):
    values = rows(fp32("src", ops, attrs))
    if values.shape[1] < SEARCH_WIDTH:
        raise ValueError(f"max8: src has {values.shape[1]} elements per partition, fewer than 8")
    descending = np.sort(values, axis=1)[:, ::-1]
    return {"dst": np.ascontiguousarray(descending[:, :SEARCH_WIDTH])}


@semantics("nc_find_index8")
def nc_find_index8(ctx, ops, attrs):
    data = rows(fp32("data", ops, attrs))
    vals = rows(fp32("vals", ops, attrs))[:, :SEARCH_WIDTH]
    dst_dtype = dtype_of("dst", ops, attrs, default="uint32")
    out = np.full(vals.shape, NOT_FOUND, dtype=np.int64)
    for partition in range(data.shape[0]):
        seen: dict[float, int] = {}
        for i, value in enumerate(vals[partition]):
            positions = np.flatnonzero(data[partition] == value)
            occurrence = seen.get(float(value), 0)
            seen[float(value)] = occurrence + 1
            if occurrence < positions.size:
                out[partition, i] = positions[occurrence]
    return {"dst": _indices(out, dst_dtype)}


@semantics("nc_match_replace8", outputs=("dst", "dst_idx"))
def nc_match_replace8(ctx, ops, attrs):
    data = ops["data"]
    data_dtype = dtype_of("data", ops, attrs)
    dst_dtype = dtype_of("dst", ops, attrs, default=data_dtype)
    original = rows(fp32("data", ops, attrs))
    current = original.copy()
    vals = rows(fp32("vals", ops, attrs))[:, :SEARCH_WIDTH]
    replacement = np.float32(param("imm", ops, attrs))
    idx_dtype = dtype_of("dst_idx", ops, attrs, default="uint32")
    found = np.full(vals.shape, NOT_FOUND, dtype=np.int64)
    replaced = np.zeros(current.shape, dtype=bool)
    for partition in range(current.shape[0]):
        for i in range(SEARCH_WIDTH - 1, -1, -1):
            positions = np.flatnonzero(current[partition] == vals[partition, i])
            if positions.size:
                current[partition, positions[0]] = replacement
                replaced[partition, positions[0]] = True
                found[partition, i] = positions[0]
    if dst_dtype == data_dtype:
        out = rows(data)
    else:
        out = dtypes.cast(original, dst_dtype)
    out = np.where(replaced, dtypes.cast(np.asarray(replacement), dst_dtype), out)
    return {
        "dst": out.reshape(data.shape),
        "dst_idx": _indices(found, idx_dtype),
    }


#: Partitions of one GpSimd core: a topk input snake spans them.
SNAKE_PARTITIONS = 16


@semantics("topk", outputs=("val_dst", "idx_dst"))
def topk(ctx, ops, attrs):
    """The K largest of the n elements of each 16-partition snake (element e at partition
    e % 16 of the group, column e // 16), in ascending order, with their snake indices; every
    partition of the group receives its group's result. Among equal values the lower index
    ranks higher (it is kept first when the K-th place is tied, and follows the higher index
    in the ascending output); NaN ranks above every number."""
    src = rows(fp32("src", ops, attrs))
    n = int(param("n", ops, attrs))
    val_shape = attrs["_shapes"]["val_dst"]
    k = int(np.prod(val_shape[1:]))
    partitions = src.shape[0]
    values = np.empty((partitions, k), np.float32)
    found = np.empty((partitions, k), np.int64)
    for group in range(0, partitions, SNAKE_PARTITIONS):
        snake = src[group : group + SNAKE_PARTITIONS].T.reshape(-1)[:n]
        # NaN first, then descending by value, ties by ascending index
        nan = np.isnan(snake)
        order = np.lexsort((np.arange(snake.size), np.where(nan, 0, -snake), ~nan))
        best = order[:k][::-1]
        values[group : group + SNAKE_PARTITIONS] = snake[best]
        found[group : group + SNAKE_PARTITIONS] = best
    idx_dtype = dtype_of("idx_dst", ops, attrs, default="uint32")
    return {"val_dst": values, "idx_dst": _indices(found, idx_dtype)}
