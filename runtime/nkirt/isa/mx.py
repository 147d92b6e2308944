"""Semantics of quantize_mx: bf16/fp16 tiles to MXFP8 x4 words plus e8m0 group scales."""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa.operands import dtype_of, fp32, rows
from nkirt.isa.registry import semantics
from nkirt.isa.tensor_engine import MX_GROUP_PARTITIONS, QUADRANT, mx_scale_rows

#: Largest unbiased exponent of each MX element type (Emax of ISA §5.3 quantize_mx).
MX_EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
E8M0_BIAS = 127
E8M0_NAN = 255
_PACK = 4


def _per_element(per_group: np.ndarray) -> np.ndarray:
    """Expand a [groups, F/4] array to the [P, F] elements each group covers."""
    return np.repeat(np.repeat(per_group, MX_GROUP_PARTITIONS, axis=0), _PACK, axis=1)


@semantics("quantize_mx", outputs=("dst", "dst_scale"), reads_outputs=True)
def quantize_mx(ctx, ops, attrs):
    src = rows(fp32("src", ops, attrs))
    dst_dtype = dtype_of("dst", ops, attrs)
    if dst_dtype not in MX_EMAX:
        raise ValueError(f"quantize_mx: unsupported dst dtype {dst_dtype}")
    partitions, free = src.shape
    if partitions % QUADRANT or free % _PACK:
        raise ValueError(f"quantize_mx: src shape {src.shape} needs P % 32 == 0 and F % 4 == 0")
    groups = src.reshape(
        partitions // MX_GROUP_PARTITIONS, MX_GROUP_PARTITIONS, free // _PACK, _PACK
    )
    amax = np.abs(groups).max(axis=(1, 3))
    _, exponent = np.frexp(amax)
    # NKI 0.5 on: twice the OCP sample algorithm's scale 2^(floor(log2 amax) - emax);
    # `scale_rule="ocp"` (kernels of NKI 0.3/0.4) keeps the OCP scale
    code = (exponent.astype(np.int64) - 1) - (MX_EMAX[dst_dtype] - 1) + E8M0_BIAS
    if attrs.get("scale_rule") == "ocp":
        code = code - 1
    code = np.where(amax == 0, 0, np.clip(code, 0, E8M0_NAN - 1))
    code = np.where(np.isfinite(amax), code, E8M0_NAN)
    shift = _per_element(np.where(code == E8M0_NAN, 0, E8M0_BIAS - code))
    with np.errstate(all="ignore"):
        scaled = np.ldexp(src.astype(np.float64), shift).astype(np.float32)
    scaled = np.where(_per_element(code == E8M0_NAN), np.float32(np.nan), scaled)
    words = dtypes.pack_x4(scaled, dst_dtype)
    scale_tile = rows(ops["dst_scale"]).copy()
    scale_tile[mx_scale_rows(partitions)] = code.astype(np.uint8).view(scale_tile.dtype)
    return {
        "dst": words.reshape(ops["dst"].shape),
        "dst_scale": scale_tile.reshape(ops["dst_scale"].shape),
    }
