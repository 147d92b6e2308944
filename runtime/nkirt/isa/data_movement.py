"""Semantics of the copies, fills, transposes and shuffles: DMA, tensor_copy family, memset."""

from __future__ import annotations

import re

import numpy as np

from nkirt import dtypes
from nkirt.isa.operands import dtype_of, param, rows
from nkirt.isa.registry import semantics

#: Permutation applied by dma_transpose for each source rank.
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def convert(
    array: np.ndarray, src_dtype: str, dst_dtype: str, instruction: str, scratch=None
) -> np.ndarray:
    """Copy with conversion src -> fp32 -> dst; the same dtype copies the bits. `scratch`
    (`nkirt.scratch`): where the converted values' temporaries come from."""
    if src_dtype == dst_dtype:
        return array
    if src_dtype in dtypes.PACKED_ELEMENT or dst_dtype in dtypes.PACKED_ELEMENT:
        raise ValueError(f"{instruction}: cannot convert {src_dtype} to {dst_dtype}")
    return dtypes.cast(dtypes.to_fp32(array, src_dtype, scratch), dst_dtype, scratch)


@semantics("dma_copy")
def dma_copy(ctx, ops, attrs):
    src_dtype = dtype_of("src", ops, attrs)
    dst_dtype = dtype_of("dst", ops, attrs, default=src_dtype)
    return {"dst": convert(ops["src"], src_dtype, dst_dtype, "dma_copy", ctx.scratch)}


@semantics("tensor_copy")
def tensor_copy(ctx, ops, attrs):
    src_dtype = dtype_of("src", ops, attrs)
    dst_dtype = dtype_of("dst", ops, attrs, default=src_dtype)
    return {"dst": convert(ops["src"], src_dtype, dst_dtype, "tensor_copy", ctx.scratch)}


@semantics("dma_transpose")
def dma_transpose(ctx, ops, attrs):
    src = ops["src"]
    if "indices" in ops:
        raise ValueError("dma_transpose: indirect (vector_offset) transpose is not simulated")
    axes = attrs.get("axes") or DMA_TRANSPOSE_AXES.get(src.ndim)
    if axes is None or tuple(axes) != DMA_TRANSPOSE_AXES.get(src.ndim):
        raise ValueError(f"dma_transpose: unsupported axes {axes} for a rank-{src.ndim} source")
    return {"dst": np.ascontiguousarray(np.transpose(src, tuple(axes)))}


def _sources(ops, attrs) -> tuple[list[np.ndarray], list[str]]:
    """dma_compute's `srcs`: one list operand, or operands `srcs0`, `srcs1`, … in index order."""
    if "srcs" in ops:
        srcs = list(ops["srcs"])
        names = attrs.get("_dtypes", {}).get("srcs") or [dtypes.name_of(s.dtype) for s in srcs]
        return srcs, list(names)
    indexed = sorted(
        (int(match.group(1)), key)
        for key in ops
        if (match := re.fullmatch(r"srcs\W*(\d+)\W*", key)) is not None
    )
    if not indexed:
        raise ValueError("dma_compute: no srcs operands")
    keys = [key for _, key in indexed]
    return [ops[key] for key in keys], [dtype_of(key, ops, attrs) for key in keys]


@semantics("dma_compute")
def dma_compute(ctx, ops, attrs):
    if attrs.get("reduce_op", "add") != "add":
        raise ValueError(f"dma_compute: unsupported reduce_op {attrs['reduce_op']!r}")
    srcs, names = _sources(ops, attrs)
    scales = param("scales", ops, attrs, None) or [1.0] * len(srcs)
    shape = srcs[0].shape
    total = None
    for src, name, scale in zip(srcs, names, scales, strict=True):
        term = dtypes.to_fp32(src, name).reshape(shape) * np.float32(scale)
        total = term if total is None else total + term
    return {"dst": total.astype(np.float32)}


@semantics("memset", reads_outputs=True)
def memset(ctx, ops, attrs):
    dst = ops["dst"]
    dst_dtype = dtype_of("dst", ops, attrs)
    value = param("value", ops, attrs)
    if dst_dtype in dtypes.PACKED_ELEMENT:
        if value != 0:
            raise ValueError(f"memset: packed {dst_dtype} can only be set to 0")
        return {"dst": np.zeros(dst.shape, dtype=dst.dtype)}
    return {"dst": dtypes.cast(np.full(dst.shape, value), dst_dtype)}


@semantics("tensor_copy_predicated", reads_outputs=True)
def tensor_copy_predicated(ctx, ops, attrs):
    dst = ops["dst"]
    dst_dtype = dtype_of("dst", ops, attrs)
    predicate = ops["predicate"].reshape(dst.shape) != 0
    if attrs.get("reverse_pred", False):
        predicate = ~predicate
    src = param("src", ops, attrs)
    if isinstance(src, np.ndarray):
        src_dtype = dtype_of("src", ops, attrs)
        values = convert(src, src_dtype, dst_dtype, "tensor_copy_predicated").reshape(dst.shape)
    else:
        values = dtypes.cast(np.asarray(src), dst_dtype)
    return {"dst": np.where(predicate, values, dst)}


@semantics("nc_stream_shuffle", reads_outputs=True)
def nc_stream_shuffle(ctx, ops, attrs):
    dst = ops["dst"]
    src = rows(ops["src"])
    mask = list(param("shuffle_mask", ops, attrs))
    if len(mask) != 32:
        raise ValueError(f"nc_stream_shuffle: shuffle_mask has {len(mask)} entries, not 32")
    out = rows(dst).copy()
    for partition in range(out.shape[0]):
        source = int(mask[partition % 32])
        if source == 255:
            continue
        row = (partition // 32) * 32 + source
        if not 0 <= source < 32 or row >= src.shape[0]:
            raise ValueError(
                f"nc_stream_shuffle: shuffle_mask[{partition % 32}] = {source} makes dst "
                f"partition {partition} read partition {row} of a {src.shape[0]}-partition src"
            )
        out[partition] = src[row]
    return {"dst": out.reshape(dst.shape)}
