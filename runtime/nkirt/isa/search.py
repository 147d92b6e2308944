"""Semantics of the top-8 search family: max8, nc_find_index8, nc_match_replace8."""

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
