"""Semantics of reductions, scans and the instructions that drive the VectorE accumulators."""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.isa import accumulators, alu
from nkirt.isa.elementwise import stage
from nkirt.isa.operands import dtype_of, fp32, fp32_param, from_bits, raw_bits, rows
from nkirt.isa.registry import semantics

FP32_MIN = float(np.finfo(np.float32).min)


def _reduced_axes(axis, ndim: int) -> int:
    """The first reduced axis of a trailing-axes reduction (`axis` int or sequence)."""
    axes = sorted({int(a) % ndim for a in np.atleast_1d(axis)})
    if not axes or axes[0] == 0 or axes != list(range(axes[0], ndim)):
        raise ValueError(f"tensor_reduce: axis {axis} is not a run of trailing free axes")
    return axes[0]


def reduce_last(op: str, values: np.ndarray, instruction: str) -> np.ndarray:
    """Reduce fp32 `values` over the last axis: add/subtract/multiply as a sequential left
    fold x0 op x1 op ..., max/min NaN-propagating, logical ops on truth values."""
    with np.errstate(all="ignore"):
        if op in alu.SEQUENTIAL:
            return alu.SEQUENTIAL[op].accumulate(values, axis=-1)[..., -1]
        if op in ("maximum", "minimum"):
            return getattr(np, op).reduce(values, axis=-1)
        truth = values != 0
        if op == "logical_and":
            return truth.all(axis=-1).astype(np.float32)
        if op == "logical_or":
            return truth.any(axis=-1).astype(np.float32)
        if op == "logical_xor":
            return (np.count_nonzero(truth, axis=-1) % 2).astype(np.float32)
    raise ValueError(f"{instruction}: unsupported reduction op {op!r}")


@semantics("tensor_reduce")
def tensor_reduce(ctx, ops, attrs):
    data = ops["data"]
    op = attrs["op"]
    first = _reduced_axes(attrs["axis"], data.ndim)
    kept = data.shape[:first]
    out_shape = kept + (1,) * (data.ndim - first) if attrs.get("keepdims", False) else kept
    if op in alu.BITVEC_REDUCE:
        if attrs.get("negate", False):
            raise ValueError("tensor_reduce: negate is not allowed with a bitvec op")
        bits = alu.BITVEC_REDUCE[op].reduce(raw_bits(data).reshape(kept + (-1,)), axis=-1)
        dst_dtype = dtype_of("dst", ops, attrs, default=dtype_of("data", ops, attrs))
        return {"dst": from_bits(bits, dst_dtype).reshape(out_shape)}
    values = fp32("data", ops, attrs).reshape(kept + (-1,))
    result = reduce_last(op, values, "tensor_reduce")
    if attrs.get("negate", False):
        result = -result
    return {"dst": result.reshape(out_shape)}


@semantics("tensor_partition_reduce")
def tensor_partition_reduce(ctx, ops, attrs):
    data = ops["data"]
    op = attrs["op"]
    data_dtype = dtype_of("data", ops, attrs)
    out_shape = (1,) + data.shape[1:]
    if op in ("bitwise_and", "bitwise_or"):
        bits = alu.BITVEC_REDUCE[op].reduce(raw_bits(data), axis=0)
        dst_dtype = dtype_of("dst", ops, attrs, default=data_dtype)
        return {"dst": from_bits(bits, dst_dtype).reshape(out_shape)}
    if op not in ("add", "average", "maximum"):
        raise ValueError(f"tensor_partition_reduce: unsupported op {op!r}")
    if dtypes.is_integer(data_dtype) and op != "average":
        wide = data.astype(np.int64)
        total = wide.sum(axis=0) if op == "add" else wide.max(axis=0)
        signed = data_dtype != "uint32"
        values = alu.wrap32(total, signed)
        dst_dtype = dtype_of("dst", ops, attrs, default=data_dtype)
        return {"dst": dtypes.cast(values, dst_dtype).reshape(out_shape)}
    values = np.moveaxis(fp32("data", ops, attrs), 0, -1)
    if op == "maximum":
        result = np.maximum.reduce(values, axis=-1)
    else:
        result = reduce_last("add", values, "tensor_partition_reduce")
        if op == "average":
            result = result / np.float32(data.shape[0])
    return {"dst": result.astype(np.float32).reshape(out_shape)}


def _reduce_res(result: np.ndarray, negate: bool = False) -> np.ndarray:
    column = result.reshape(-1, 1).astype(np.float32)
    return -column if negate else column


@semantics("tensor_scalar_reduce", outputs=("dst", "reduce_res"))
def tensor_scalar_reduce(ctx, ops, attrs):
    data = ops["data"]
    operand0 = fp32_param("operand0", ops, attrs, data.ndim, None)
    value = stage(
        attrs["op0"],
        fp32("data", ops, attrs),
        operand0,
        attrs.get("reverse0", False),
        "tensor_scalar_reduce",
    )
    init = fp32_param("reduce_init", ops, attrs, 2, None)
    acc = accumulators.apply_reduce_cmd(
        ctx,
        "vector",
        "tensor_scalar_reduce",
        attrs.get("reduce_cmd", "reset_reduce"),
        attrs["reduce_op"],
        rows(value),
        init,
        first=accumulators.first_lane(attrs),
    )
    return {"dst": value, "reduce_res": _reduce_res(acc, attrs.get("reduce_res_negate", False))}


@semantics("tensor_scalar_cumulative")
def tensor_scalar_cumulative(ctx, ops, attrs):
    src = ops["src"]
    op0, op1 = attrs["op0"], attrs["op1"]
    if op1 not in ("add", "subtract", "multiply", "maximum", "minimum"):
        raise ValueError(f"tensor_scalar_cumulative: unsupported op1 {op1!r}")
    values = rows(
        stage(
            op0,
            fp32("src", ops, attrs),
            fp32_param("imm0", ops, attrs, src.ndim),
            False,
            "tensor_scalar_cumulative",
        )
    )
    lanes = values.shape[0]
    cmd = attrs.get("reduce_cmd", "reset_reduce")
    first = accumulators.first_lane(attrs)
    registers = accumulators.registers(ctx, "vector")[first : first + lanes]
    if cmd == "reset_reduce":
        acc = np.full(lanes, alu.REDUCE_IDENTITY[op1], dtype=np.float32)
    elif cmd == "reduce":
        acc = registers.copy()
    elif cmd == "load_reduce":
        acc = np.broadcast_to(fp32_param("imm1", ops, attrs, 1), (lanes,)).astype(np.float32)
    else:
        raise ValueError(f"tensor_scalar_cumulative: unsupported reduce_cmd {cmd!r}")
    out = np.empty_like(values)
    for i in range(values.shape[1]):
        acc = alu.arithmetic(op1, values[:, i], acc, "tensor_scalar_cumulative")
        out[:, i] = acc
    registers[:] = acc
    return {"dst": out.reshape(src.shape)}


@semantics("tensor_tensor_scan")
def tensor_tensor_scan(ctx, ops, attrs):
    data0 = ops["data0"]
    x0 = rows(fp32("data0", ops, attrs))
    x1 = rows(fp32("data1", ops, attrs))
    op0, op1 = attrs["op0"], attrs["op1"]
    reverse0, reverse1 = attrs.get("reverse0", False), attrs.get("reverse1", False)
    previous = np.broadcast_to(fp32_param("initial", ops, attrs, 1), (x0.shape[0],))
    out = np.empty_like(x0)
    for i in range(x0.shape[1]):
        value = stage(op0, x0[:, i], previous, reverse0, "tensor_tensor_scan")
        previous = stage(op1, value, x1[:, i], reverse1, "tensor_tensor_scan")
        out[:, i] = previous
    return {"dst": out.reshape(data0.shape)}


def _sequential_sum(values: np.ndarray) -> np.ndarray:
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1], dtype=np.float32)
    return np.add.accumulate(values, axis=-1)[..., -1]


def _moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, mean and sum of squared deviations per row, in fp32 (two passes)."""
    count = np.float32(values.shape[1])
    if values.shape[1] == 0:
        zeros = np.zeros(values.shape[0], dtype=np.float32)
        return zeros, zeros, zeros
    mean = _sequential_sum(values) / count
    deviation = values - mean[:, None]
    return (
        np.full(values.shape[0], count, dtype=np.float32),
        mean,
        _sequential_sum(deviation * deviation),
    )


@semantics("bn_stats")
def bn_stats(ctx, ops, attrs):
    values = rows(fp32("data", ops, attrs))
    with np.errstate(all="ignore"):
        even = _moments(values[:, 0::2])
        odd = _moments(values[:, 1::2])
    return {"dst": np.stack(even + odd, axis=1).astype(np.float32)}


@semantics("bn_aggr")
def bn_aggr(ctx, ops, attrs):
    values = rows(fp32("data", ops, attrs))
    if values.shape[1] % 3:
        raise ValueError(f"bn_aggr: free size {values.shape[1]} is not a multiple of 3")
    triples = values.reshape(values.shape[0], -1, 3)
    count, mean, m2 = triples[..., 0], triples[..., 1], triples[..., 2]
    with np.errstate(all="ignore"):
        total = _sequential_sum(count)
        safe_total = np.where(total == 0, np.float32(1), total)
        overall = _sequential_sum(count * mean) / safe_total
        spread = mean - overall[:, None]
        m2_total = _sequential_sum(m2) + _sequential_sum(count * spread * spread)
        variance = m2_total / safe_total
    return {"dst": np.stack([overall, variance], axis=1).astype(np.float32)}


@semantics("range_select", outputs=("dst", "reduce_res"))
def range_select(ctx, ops, attrs):
    on_true = ops["on_true_tile"]
    index = np.float32(attrs.get("range_start", 0)) + np.arange(
        rows(on_true).shape[1], dtype=np.float32
    )
    index = np.broadcast_to(index, rows(on_true).shape)
    keep = (
        alu.arithmetic(
            attrs["comp_op0"], index, fp32_param("bound0", ops, attrs, 2), "range_select"
        )
        != 0
    ) & (
        alu.arithmetic(
            attrs["comp_op1"], index, fp32_param("bound1", ops, attrs, 2), "range_select"
        )
        != 0
    )
    fill = attrs.get("on_false_value", FP32_MIN)
    values = np.where(keep, rows(fp32("on_true_tile", ops, attrs)), np.float32(fill))
    acc = accumulators.apply_reduce_cmd(
        ctx,
        "vector",
        "range_select",
        attrs.get("reduce_cmd", "reset_reduce"),
        attrs.get("reduce_op", "maximum"),
        values,
        first=accumulators.first_lane(attrs),
    )
    return {"dst": values.reshape(on_true.shape), "reduce_res": _reduce_res(acc)}


@semantics("select_reduce", outputs=("dst", "reduce_res"))
def select_reduce(ctx, ops, attrs):
    on_true = ops["on_true"]
    predicate = ops["predicate"].reshape(on_true.shape) != 0
    if attrs.get("reverse_pred", False):
        predicate = ~predicate
    on_false = fp32_param("on_false", ops, attrs, on_true.ndim)
    values = np.where(predicate, fp32("on_true", ops, attrs), on_false).astype(np.float32)
    acc = accumulators.apply_reduce_cmd(
        ctx,
        "vector",
        "select_reduce",
        attrs.get("reduce_cmd", "idle"),
        attrs.get("reduce_op", "maximum"),
        rows(values),
        first=accumulators.first_lane(attrs),
    )
    return {"dst": values, "reduce_res": _reduce_res(acc)}


@semantics("exponential", outputs=("dst", "reduce_res"))
def exponential(ctx, ops, attrs):
    src = ops["src"]
    shifted = alu.arithmetic(
        "subtract", fp32("src", ops, attrs), fp32_param("max_value", ops, attrs, src.ndim, 0.0)
    )
    with np.errstate(all="ignore"):
        values = np.exp(shifted.astype(np.float64)).astype(np.float32)
    cmd = attrs.get("reduce_cmd", "idle")
    init = fp32_param("reduce_init", ops, attrs, 1, 0.0)
    acc = accumulators.apply_reduce_cmd(
        ctx, "vector", "exponential", cmd, "add", rows(values), init, accumulators.first_lane(attrs)
    )
    return {"dst": values, "reduce_res": _reduce_res(acc)}
