"""Semantics of the Tensor Engine: nc_matmul, nc_matmul_mx and nc_transpose."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nkirt import dtypes
from nkirt.isa.operands import dtype_of, from_bits, raw_bits, rows
from nkirt.isa.registry import semantics

MX_GROUP_PARTITIONS = 8
QUADRANT = 32


def contract(stationary: np.ndarray, moving: np.ndarray, exact: bool, scratch=None) -> np.ndarray:
    """stationary[K, M].T @ moving[K, N] in fp32.

    `exact`: as the PE array computes it, each product rounded to fp32 and summed over
    k = 0..K-1 in order in fp32 (K vectorised steps over the [M, N] result). Otherwise one
    BLAS fp32 matrix product: the same products (exact in fp32 for bf16, fp16, fp8 and tf32
    inputs, so only the order of the K additions differs; fp32 inputs may also skip the
    rounding of each product, as with a fused multiply-add). docs/numerics.md bounds the
    difference; `--exact-accumulation` selects the in-order path for a whole run.
    `scratch` (`nkirt.scratch`): where the BLAS product is written.
    """
    if not exact:
        out = None
        if scratch is not None:
            out = scratch.empty((stationary.shape[1], moving.shape[1]), np.float32)
        with np.errstate(all="ignore"):
            return np.matmul(stationary.T, moving, dtype=np.float32, out=out)
    out = np.zeros((stationary.shape[1], moving.shape[1]), dtype=np.float32)
    product = np.empty_like(out)
    with np.errstate(all="ignore"):
        for k in range(stationary.shape[0]):
            np.multiply(stationary[k][:, None], moving[k][None, :], out=product)
            np.add(out, product, out=out)
    return out


def accumulate_into_psum(ops, attrs, result: np.ndarray, scratch=None) -> np.ndarray:
    """Write `result` (fp32) to dst, adding the current dst when `accumulate` is set; the sum
    is rounded once to dst's dtype (fp32, or bf16 on trn3). With `scratch`, `result` is one of
    its temporaries (the sum overwrites it) and so are the values returned."""
    dst = ops["dst"]
    dst_dtype = dtype_of("dst", ops, attrs)
    result = result.reshape(dst.shape)
    if attrs.get("accumulate", False):
        with np.errstate(all="ignore"):
            current = dtypes.to_fp32(dst, dst_dtype, scratch)
            if scratch is None:
                result = current + result
            else:
                np.add(current, result, out=result)
    return dtypes.cast(result, dst_dtype, scratch)


def _contraction_rows(operand: np.ndarray, double_row: bool, name: str) -> np.ndarray:
    if double_row:
        if operand.ndim != 3 or operand.shape[1] != 2:
            raise ValueError(f"nc_matmul: double_row {name} must be [K, 2, F], got {operand.shape}")
        return operand.reshape(operand.shape[0] * 2, operand.shape[2])
    return rows(operand)


def _transpose_mode(ops, attrs) -> np.ndarray:
    stationary = rows(ops["stationary"])
    selector = dtypes.to_fp32(rows(ops["moving"]), dtype_of("moving", ops, attrs))
    ones = selector == 1
    if not np.all(ones | (selector == 0)) or np.any(ones.sum(axis=0) > 1):
        raise ValueError("nc_matmul: is_transpose needs a 0/1 selection matrix as moving")
    source_row = np.where(ones.any(axis=0), ones.argmax(axis=0), -1)
    bits = raw_bits(stationary)
    picked = np.where(source_row[None, :] >= 0, bits.T[:, np.maximum(source_row, 0)], 0)
    dst = ops["dst"]
    return from_bits(picked, dtype_of("dst", ops, attrs)).reshape(dst.shape)


@semantics("nc_matmul", reads_outputs=True)
def nc_matmul(ctx, ops, attrs):
    if attrs.get("is_transpose", False) and ctx.target != "trn1":
        return {"dst": _transpose_mode(ops, attrs)}
    double_row = attrs.get("perf_mode", "none") == "double_row"
    scratch = None if ctx.exact_accumulation else ctx.scratch
    stationary = dtypes.to_fp32(
        _contraction_rows(ops["stationary"], double_row, "stationary"),
        dtype_of("stationary", ops, attrs),
        scratch,
    )
    moving = dtypes.to_fp32(
        _contraction_rows(ops["moving"], double_row, "moving"),
        dtype_of("moving", ops, attrs),
        scratch,
    )
    if stationary.shape[0] != moving.shape[0]:
        raise ValueError(
            f"nc_matmul: contraction sizes differ ({stationary.shape[0]} vs {moving.shape[0]})"
        )
    product = contract(stationary, moving, ctx.exact_accumulation, scratch)
    return {"dst": accumulate_into_psum(ops, attrs, product, scratch)}


def mx_scale_rows(data_partitions: int) -> np.ndarray:
    """Row of the MX scale tile holding each 8-partition group's scales: group g is on row g
    when the data spans ≤ 32 partitions, else on row (g // 4) * 32 + g % 4 (the first 4
    partitions of the group's quadrant)."""
    g = np.arange(data_partitions // MX_GROUP_PARTITIONS)
    if data_partitions <= QUADRANT:
        return g
    per_quadrant = QUADRANT // MX_GROUP_PARTITIONS
    return (g // per_quadrant) * QUADRANT + g % per_quadrant


def _mx_scales(scale: np.ndarray, scale_dtype: str, data_partitions: int) -> np.ndarray:
    """Per-group fp32 scale factors [groups, F] from an MX scale tile."""
    codes = rows(scale)[mx_scale_rows(data_partitions)]
    if scale_dtype == "uint8":
        codes = codes.view(ml_dtypes.float8_e8m0fnu)
    return codes.astype(np.float32)


def _mx_dequantize(ops, attrs, data_name: str, scale_name: str) -> np.ndarray:
    """Dequantized [K = P * 4, F] fp32 matrix of an MX operand (contraction index p*4 + j)."""
    data = rows(ops[data_name])
    partitions = data.shape[0]
    if partitions % QUADRANT:
        raise ValueError(f"nc_matmul_mx: {data_name} partitions {partitions} not a multiple of 32")
    values = dtypes.unpack_x4(data, dtype_of(data_name, ops, attrs))
    values = values.reshape(partitions, data.shape[1], 4)
    scales = _mx_scales(ops[scale_name], dtype_of(scale_name, ops, attrs), partitions)
    per_partition = np.repeat(scales, MX_GROUP_PARTITIONS, axis=0)[:, :, None]
    with np.errstate(all="ignore"):
        scaled = values * per_partition
    return scaled.transpose(0, 2, 1).reshape(partitions * 4, data.shape[1])


@semantics("nc_matmul_mx", reads_outputs=True)
def nc_matmul_mx(ctx, ops, attrs):
    stationary = _mx_dequantize(ops, attrs, "stationary", "stationary_scale")
    moving = _mx_dequantize(ops, attrs, "moving", "moving_scale")
    product = contract(stationary, moving, ctx.exact_accumulation)
    return {"dst": accumulate_into_psum(ops, attrs, product)}


@semantics("nc_transpose")
def nc_transpose(ctx, ops, attrs):
    data = rows(ops["data"])
    if ctx.target == "trn1" and attrs.get("engine") == "tensor":
        data_dtype = dtype_of("data", ops, attrs)
        identity = np.eye(data.shape[0], dtype=np.float32)
        product = contract(dtypes.to_fp32(data, data_dtype), identity, exact=True)
        return {"dst": dtypes.cast(product, dtype_of("dst", ops, attrs, default=data_dtype))}
    return {"dst": np.ascontiguousarray(data.T)}
