"""`nki.language` data movement, Tensor Engine, selection, random-number and constant APIs
lowered to `nki.isa`: load/store (DMA), copy, matmul/transpose (TensorE into PSUM),
broadcast_to, expand_dims, gather_flattened, where, dropout, rand, random_seed,
shared_constant, shared_identity_matrix and device_print."""

from __future__ import annotations

import math
import os
import stat

from ..diagnostics import Diagnostic
from ..ir.core import Alloc, Tensor
from ..ir.types import DTYPES
from . import nki_api as api
from .nl_lowering import (
    emit,
    fail,
    free_size,
    is_int,
    lowering,
    new_tile,
    number,
    op,
    out_dtype,
    show_shape,
    tile,
)
from .tensors import TensorView, type_name
from .values import UserError

HBM = ("hbm", "shared_hbm")
PMAX = 128  # nl.tile_size.pmax
MATMUL_FMAX = {"stationary": 128, "moving": 512}  # nl.tile_size.gemm_{stationary,moving}_fmax
MATMUL_DTYPES = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32")


def _partitions(call, index, name, t: TensorView, fn: str, partitions: int) -> None:
    if partitions > PMAX:
        raise fail(
            "err_num_partition_exceed_arch_limit",
            f"nl.{fn}: `{name}` {show_shape(t.shape)} would need {partitions} partitions; "
            f"a tile has at most {PMAX}",
            call, index, name, "tile the operation over blocks of 128 rows",
        )  # fmt: skip


def _rank2(call, index, name, t: TensorView, fn: str) -> None:
    if len(t.shape) != 2:
        raise fail(
            "err_invalid_argument",
            f"nl.{fn}: `{name}` must be 2-D, got shape {show_shape(t.shape)}",
            call, index, name, "index or reshape the tensor to (partitions, free)",
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# data movement


@lowering("load")
def load(ip, call, src, dtype=None):
    """HBM -> a new SBUF tile of the same shape (`dma_copy`, which converts dtypes)."""
    src = tile(call, 0, "src", src, "load", HBM)
    if len(src.shape) < 2:
        raise fail(
            "err_invalid_argument",
            f"nl.load: `src` has shape {show_shape(src.shape)}; a tile needs a partition and "
            "a free dimension",
            call, 0, "src", "reshape the HBM tensor, e.g. x.reshape((1, n))",
        )  # fmt: skip
    _partitions(call, 0, "src", src, "load", src.shape[0])
    dst = new_tile(ip, call, src.shape, out_dtype(call, 1, dtype, src.dtype))
    emit(ip, call, "dma_copy", dst=dst, src=src)
    return dst


@lowering("store")
def store(ip, call, dst, value):
    """An SBUF tile -> HBM (`dma_copy`). PSUM values are rejected, as in NKI 0.3.0."""
    dst = tile(call, 0, "dst", dst, "store", HBM)
    value = tile(call, 1, "value", value, "store", ("sbuf",))
    if [d for d in dst.shape if d != 1] != [d for d in value.shape if d != 1]:
        raise fail(
            "err_shape_mismatch",
            f"nl.store: `value` has shape {show_shape(value.shape)} but `dst` has shape "
            f"{show_shape(dst.shape)}",
            call, 1, "value", "slice `dst` to the tile's shape",
        )  # fmt: skip
    emit(ip, call, "dma_copy", dst=dst, src=value)


@lowering("load_transpose2d")
def load_transpose2d(ip, call, src, dtype=None, itemsizes=(2,)):
    """HBM (a, b) -> SBUF (b, a) with `dma_transpose` (trn2+, 2-byte dtypes; Beta 1 also
    4-byte ones, `itemsizes`)."""
    src = tile(call, 0, "src", src, "load_transpose2d", HBM)
    _rank2(call, 0, "src", src, "load_transpose2d")
    if DTYPES[src.dtype].itemsize not in itemsizes:
        sizes = " or ".join(f"{n}-byte" for n in itemsizes)
        raise fail(
            "err_dtype_mismatch",
            f"nl.load_transpose2d: `src` is {src.dtype}; the DMA transposes {sizes} elements only",
            call, 0, "src", "load bfloat16/float16 data, or nl.load then nl.transpose",
        )  # fmt: skip
    _partitions(call, 0, "src", src, "load_transpose2d", src.shape[1])
    shape = (src.shape[1], src.shape[0])
    result = out_dtype(call, 1, dtype, src.dtype)
    dst = new_tile(ip, call, shape, src.dtype, label="" if result == src.dtype else "transposed")
    emit(ip, call, "dma_transpose", dst=dst, src=src)
    return _cast(ip, call, dst, result)


def _cast(ip, call, t: TensorView, dtype: str, buffer: str | None = None) -> TensorView:
    """`t` itself when it already has `dtype` (and buffer), else a converting copy."""
    buffer = buffer or t.buffer
    if t.dtype == dtype and t.buffer == buffer:
        return t
    dst = new_tile(ip, call, t.shape, dtype, buffer)
    emit(ip, call, "tensor_copy", dst=dst, src=t)
    return dst


@lowering("copy")
def copy(ip, call, x, dtype=None):
    """A new SBUF tile with x's values (`tensor_copy`, bit-exact for equal dtypes)."""
    x = tile(call, 0, "x", x, "copy")
    dst = new_tile(ip, call, x.shape, out_dtype(call, 1, dtype, x.dtype))
    emit(ip, call, "tensor_copy", dst=dst, src=x)
    return dst


@lowering("expand_dims")
def expand_dims(ip, call, x, axis):
    """A view of `x` with size-1 dimensions inserted at `axis` (an int or a list of ints)."""
    if not isinstance(x, TensorView):
        raise fail(
            "err_invalid_argument", f"nl.expand_dims: `x` must be a tensor, got {type_name(x)}",
            call, 0, "x",
        )  # fmt: skip
    items = axis if isinstance(axis, (list, tuple)) else (axis,)
    rank = len(x.shape) + len(items)
    try:
        positions = sorted(ip.need_int(a, "an axis") % rank for a in items)
        for a in positions:
            x = x.expand_dim(a)
    except UserError as err:
        err.node = call.arg_node(1, "axis")
        raise
    return x


# ---------------------------------------------------------------------------------------------
# Tensor Engine


def _matmul_operand(call, index, name, t, fn):
    t = tile(call, index, name, t, fn, ("sbuf",))
    _rank2(call, index, name, t, fn)
    if t.dtype not in MATMUL_DTYPES:
        raise fail(
            "err_dtype_mismatch",
            f"nl.{fn}: `{name}` is {t.dtype}; the Tensor engine takes "
            + ", ".join(MATMUL_DTYPES),
            call, index, name, "convert the tile with nl.copy(x, dtype=nl.bfloat16) first",
        )  # fmt: skip
    return t


@lowering("matmul")
def matmul(ip, call, x, y, transpose_x=False):
    """x.T @ y for x (K, M) and y (K, N) in SBUF: one `nc_matmul` into a new fp32 PSUM tile
    (M, N). Without transpose_x=True the transpose of x is not inserted (NKI 0.3.0 known issue)."""
    if not isinstance(transpose_x, bool):
        raise fail(
            "err_invalid_argument", "nl.matmul: `transpose_x` must be True or False",
            call, 2, "transpose_x",
        )  # fmt: skip
    if not transpose_x:
        raise fail(
            "err_unsupported_api",
            "nl.matmul(x, y) without transpose_x=True needs an implicit transpose of `x`, "
            "which NKI 0.3.0 does not support",
            call, hint="pass x already transposed as (K, M), contraction on the partition "
            "dimension, with transpose_x=True (nl.transpose(x) produces it)",
        )  # fmt: skip
    x = _matmul_operand(call, 0, "x", x, "matmul")
    y = _matmul_operand(call, 1, "y", y, "matmul")
    if y.shape[0] != x.shape[0]:
        raise fail(
            "err_shape_mismatch",
            f"nl.matmul: `y` has {y.shape[0]} partitions but `x` has {x.shape[0]}; both hold "
            "the contraction dimension K on their partitions",
            call, 1, "y",
        )  # fmt: skip
    for index, name, t, role in ((0, "x", x, "stationary"), (1, "y", y, "moving")):
        limit = MATMUL_FMAX[role] if ip.target != "trn3" or role == "stationary" else 4096
        if t.shape[1] > limit:
            raise fail(
                "err_size_of_dimension_exceed_arch_limit",
                f"nl.matmul: `{name}` has {t.shape[1]} columns; at most {limit} on {ip.target}",
                call, index, name, f"split `{name}` into blocks of {limit} columns",
            )  # fmt: skip
    dst = new_tile(ip, call, (x.shape[1], y.shape[1]), "float32", "psum")
    emit(ip, call, "nc_matmul", dst=dst, stationary=x, moving=y)
    return dst


@lowering("transpose")
def transpose(ip, call, x, dtype=None):
    """The 2-D transpose of an SBUF tile (at most 128x128) into a new PSUM tile with
    `nc_transpose` on the Tensor engine."""
    x = tile(call, 0, "x", x, "transpose", ("sbuf",))
    _rank2(call, 0, "x", x, "transpose")
    if x.shape[1] > PMAX:
        raise fail(
            "err_size_of_dimension_exceed_arch_limit",
            f"nl.transpose: `x` has {x.shape[1]} elements per partition; the Tensor engine "
            f"transposes at most {PMAX}x{PMAX}",
            call, 0, "x", "transpose 128x128 blocks one at a time",
        )  # fmt: skip
    result = out_dtype(call, 1, dtype, x.dtype)
    dst = new_tile(ip, call, (x.shape[1], x.shape[0]), x.dtype, "psum")
    emit(ip, call, "nc_transpose", dst=dst, data=x)
    return _cast(ip, call, dst, result)


def broadcast_tile(
    ip, call, x: TensorView, shape: tuple, dtype: str, fn: str, arg: tuple = (0, "x")
) -> TensorView:
    """x broadcast to `shape` (same rank) in a new SBUF tile: free dimensions through a
    stride-0 view and one `tensor_copy`; the partition dimension (x has one partition) through
    a matmul with a ones row on the Tensor engine, 512 columns at a time."""
    view = x
    for d in range(1, len(shape)):
        if x.shape[d] != shape[d]:
            view = view.broadcast(d, shape[d])
    if shape[0] == x.shape[0]:
        dst = new_tile(ip, call, shape, dtype)
        emit(ip, call, "tensor_copy", dst=dst, src=view)
        return dst
    # partition broadcast: ones(1, P).T @ row(1, F); exact for every float value
    mm_dtype = x.dtype if x.dtype in MATMUL_DTYPES else "float32"
    if is_int(x.dtype) and DTYPES[x.dtype].itemsize == 4:
        raise fail(
            "err_dtype_mismatch",
            f"nl.{fn}: broadcasting a {x.dtype} tile across partitions goes through the Tensor "
            "engine, which represents integers exactly only up to 16 bits",
            call, *arg, "broadcast a float32 or 16-bit copy of the tile",
        )  # fmt: skip
    row_shape = (1,) + tuple(shape[1:])
    row = new_tile(ip, call, row_shape, mm_dtype, label=f"{fn}_row")
    emit(ip, call, "tensor_copy", dst=row, src=view)
    ones = new_tile(ip, call, (1, shape[0]), mm_dtype, label=f"{fn}_ones")
    emit(ip, call, "memset", dst=ones, value=1.0)
    dst = new_tile(ip, call, shape, dtype)
    width = math.prod(shape[1:])
    flat_row, flat_dst = row.reshape((1, width)), dst.reshape((shape[0], width))
    chunk = MATMUL_FMAX["moving"]
    for start in range(0, width, chunk):
        size = min(chunk, width - start)
        part = new_tile(ip, call, (shape[0], size), "float32", "psum", label=f"{fn}_psum")
        emit(ip, call, "nc_matmul", dst=part, stationary=ones,
             moving=flat_row.index((slice(None), slice(start, start + size))))  # fmt: skip
        emit(ip, call, "tensor_copy",
             dst=flat_dst.index((slice(None), slice(start, start + size))), src=part)  # fmt: skip
    return dst


@lowering("broadcast_to")
def broadcast_to(ip, call, x, shape, dtype=None):
    """numpy broadcasting of a tile to a shape of the same rank (see `broadcast_tile`)."""
    x = tile(call, 0, "x", x, "broadcast_to")
    try:
        shape = api.shape_arg(ip, shape)
    except UserError as err:
        err.node = call.arg_node(1, "shape")
        raise
    if len(shape) != len(x.shape) or any(a != b and a != 1 for a, b in zip(x.shape, shape)):
        raise fail(
            "err_shape_mismatch",
            f"nl.broadcast_to: cannot broadcast a tile of shape {show_shape(x.shape)} to "
            f"{show_shape(shape)}",
            call, 1, "shape", "the ranks must be equal and each dimension equal or 1 in `x`",
        )  # fmt: skip
    if x.shape[0] != shape[0]:
        _partitions(call, 1, "shape", x, "broadcast_to", shape[0])
    return broadcast_tile(ip, call, x, shape, out_dtype(call, 2, dtype, x.dtype), "broadcast_to")


# ---------------------------------------------------------------------------------------------
# gather, select, dropout


@lowering("gather_flattened")
def gather_flattened(ip, call, data, indices, axis=0, dtype=None):
    """Per partition p: out[p, j] = flat(data[p])[indices[p, j]] (`nc_n_gather`, GpSimd)."""
    data = tile(call, 0, "data", data, "gather_flattened", ("sbuf",))
    indices = tile(call, 1, "indices", indices, "gather_flattened", ("sbuf",))
    if axis != 0:
        raise fail(
            "err_invalid_argument", f"nl.gather_flattened: `axis` must be 0, got {axis!r}",
            call, 2, "axis",
        )  # fmt: skip
    if indices.dtype not in ("uint32", "int32"):
        raise fail(
            "err_dtype_mismatch",
            f"nl.gather_flattened: `indices` is {indices.dtype}; it must be uint32",
            call, 1, "indices",
        )  # fmt: skip
    if indices.shape[0] != data.shape[0]:
        raise fail(
            "err_num_partition_mismatch",
            f"nl.gather_flattened: `indices` has {indices.shape[0]} partitions but `data` has "
            f"{data.shape[0]}",
            call, 1, "indices",
        )  # fmt: skip
    result = out_dtype(call, 3, dtype, data.dtype)
    dst = new_tile(ip, call, indices.shape, data.dtype)
    emit(ip, call, "nc_n_gather", dst=dst, data=data, indices=indices)
    return _cast(ip, call, dst, result)


@lowering("where")
def where(ip, call, condition, x, y, dtype=None):
    """x where condition is nonzero, else y: a uint8 mask (`tensor_scalar` not_equal 0), y
    copied (or filled) into the result, then `tensor_copy_predicated` of x."""
    cond = tile(call, 0, "condition", condition, "where")
    operands = ((1, "x", x), (2, "y", y))
    first_tile = None
    for index, name, v in operands:
        if isinstance(v, TensorView):
            tile(call, index, name, v, "where")
            if v.shape != cond.shape:
                raise fail(
                    "err_shape_mismatch",
                    f"nl.where: `{name}` has shape {show_shape(v.shape)} but `condition` has "
                    f"shape {show_shape(cond.shape)}; nl.where does not broadcast",
                    call, index, name,
                )  # fmt: skip
            first_tile = first_tile or v
        else:
            number(ip, call, index, name, v, "where")
    result = out_dtype(call, 3, dtype, (first_tile or cond).dtype)
    mask = new_tile(ip, call, cond.shape, "uint8", label="where_mask")
    emit(ip, call, "tensor_scalar", dst=mask, data=cond, op0=op("not_equal"), operand0=0.0)
    dst = new_tile(ip, call, cond.shape, result)
    if isinstance(y, TensorView):
        emit(ip, call, "tensor_copy", dst=dst, src=y)
    else:
        emit(ip, call, "memset", dst=dst, value=_typed(y, result))
    src = _cast(ip, call, x, result, "sbuf") if isinstance(x, TensorView) else _typed(x, result)
    emit(ip, call, "tensor_copy_predicated", dst=dst, src=src, predicate=mask)
    return dst


def _typed(value, dtype: str):
    return int(value) if is_int(dtype) else float(value)


@lowering("dropout")
def dropout(ip, call, x, rate, dtype=None):
    """Zero each element with probability `rate` (a number or an fp32 (P, 1) tile): `dropout`."""
    x = tile(call, 0, "x", x, "dropout")
    if isinstance(rate, TensorView):
        tile(call, 1, "rate", rate, "dropout")
        if rate.shape[0] != x.shape[0] or free_size(rate) != 1:
            raise fail(
                "err_shape_mismatch",
                f"nl.dropout: `rate` has shape {show_shape(rate.shape)}; it must be a number or "
                f"a ({x.shape[0]}, 1) tile",
                call, 1, "rate",
            )  # fmt: skip
    else:
        rate = number(ip, call, 1, "rate", rate, "dropout")
        if not 0.0 <= rate <= 1.0:
            raise fail(
                "err_invalid_argument", f"nl.dropout: `rate` must be in [0, 1], got {rate}",
                call, 1, "rate",
            )  # fmt: skip
    result = out_dtype(call, 2, dtype, x.dtype)
    dst = new_tile(ip, call, x.shape, x.dtype)
    emit(ip, call, "dropout", dst=dst, data=x, prob=rate)
    return _cast(ip, call, dst, result)


# ---------------------------------------------------------------------------------------------
# random numbers

#: Significand bits (with the implicit one) of each float dtype: k/2**bits is exact and < 1.
_SIGNIFICAND_BITS = {
    "float32": 24, "tfloat32": 11, "float16": 11, "bfloat16": 8, "float8_e4m3": 4,
    "float8_e4m3fn": 4, "float8_e5m2": 3,
}  # fmt: skip


@lowering("rand")
def rand(ip, call, shape, dtype, buffer=None, name=""):
    """Uniform [0, 1): 32 random bits (`rng`), shifted right to the dtype's significand width
    (`tensor_scalar` right_shift), scaled by 2**-bits (`tensor_scalar` multiply): every value
    is exact in `dtype` and below 1."""
    try:
        shape = api.shape_arg(ip, shape)
    except UserError as err:
        err.node = call.arg_node(0, "shape")
        raise
    result = out_dtype(call, 1, dtype, "float32")
    if result not in _SIGNIFICAND_BITS:
        raise fail(
            "err_invalid_argument",
            f"nl.rand: `dtype` must be a float type such as nl.float32, got {result}",
            call, 1, "dtype",
        )  # fmt: skip
    buf = "sbuf" if buffer is None else api.buffer_arg(buffer)
    if buf not in ("sbuf", "psum"):
        raise fail(
            "err_unsupported_memory", f"nl.rand: `buffer` must be nl.sbuf or nl.psum, got {buf}",
            call, 2, "buffer",
        )  # fmt: skip
    if shape[0] > PMAX:
        raise fail(
            "err_num_partition_exceed_arch_limit",
            f"nl.rand: `shape` {show_shape(shape)} has {shape[0]} partitions; at most {PMAX}",
            call, 0, "shape",
        )  # fmt: skip
    bits = _SIGNIFICAND_BITS[result]
    raw = new_tile(ip, call, shape, "uint32", label="rand_bits")
    emit(ip, call, "rng", dst=raw)
    emit(ip, call, "tensor_scalar", dst=raw, data=raw, op0=op("right_shift"), operand0=32 - bits)
    if not isinstance(name, str):
        raise fail("err_invalid_argument", "nl.rand: `name` must be a string", call, 3, "name")
    dst = ip.alloc(shape, result, buf, name, None, call)
    emit(ip, call, "tensor_scalar", dst=dst, data=raw, op0=op("multiply"),
         operand0=2.0**-bits)  # fmt: skip
    return dst


@lowering("random_seed")
def random_seed(ip, call, seed):
    """Seed the Vector engine's generator from a [1, 1] 32-bit integer tile (`set_rng_seed`)."""
    seed = tile(call, 0, "seed", seed, "random_seed")
    if seed.shape != (1, 1) or seed.dtype not in ("int32", "uint32"):
        raise fail(
            "err_invalid_argument",
            f"nl.random_seed: `seed` is a {seed.dtype} tile of shape {show_shape(seed.shape)}; "
            "it must be a (1, 1) int32 or uint32 tile",
            call, 0, "seed", "fill a (1, 1) int32 tile with nl.full((1, 1), 42, nl.int32)",
        )  # fmt: skip
    emit(ip, call, "set_rng_seed", src_seeds=seed)


# ---------------------------------------------------------------------------------------------
# constants


def constant_tensor(ip, call, array, label: str) -> TensorView:
    """A `shared_hbm` tensor holding `array`, baked into the neff (kind "constant"). Its
    allocation goes to `ip.constants`, placed at the start of the kernel when specialisation
    ends (so a constant created in a loop body is not allocated per iteration); equal constants
    share one tensor."""
    from .args import normalise_dtype_or_none

    dtype = normalise_dtype_or_none(array.dtype)
    if dtype is None:
        raise fail("err_invalid_argument", f"constants of dtype {array.dtype} are not supported",
                   call, 0)  # fmt: skip
    data = array.tobytes()
    key = (dtype, array.shape, data)
    for alloc in ip.constants:
        t = alloc.result
        if (t.dtype, t.shape, t.data) == key:
            return TensorView.whole(t)
    loc = ip.loc(call.node)
    tensor = Tensor(f"c{len(ip.constants)}", "shared_hbm", dtype, array.shape, label, "constant",
                    loc, data=data)  # fmt: skip
    ip.constants.append(Alloc(tensor, loc))
    return TensorView.whole(tensor)


#: The largest `nl.shared_constant` file nkic reads (it is baked into the .neff).
MAX_CONSTANT_BYTES = 256 << 20


def _constant_array(ip, call, constant):
    import numpy as np

    if isinstance(constant, str):
        path = constant
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(ip.module.file), path)
        try:
            # a FIFO or device would block or never end: only regular files are read, and the
            # header's declared size is checked before the data is (memory-mapped, not read)
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise ValueError("not a regular file")
            mapped = np.load(path, allow_pickle=False, mmap_mode="r")
            if mapped.nbytes > MAX_CONSTANT_BYTES:
                raise ValueError(
                    f"{mapped.nbytes:,} bytes; constants are limited to "
                    f"{MAX_CONSTANT_BYTES:,} bytes"
                )
            array = np.array(mapped)
            del mapped
        except (OSError, ValueError) as e:
            raise fail(
                "err_invalid_argument", f"nl.shared_constant: cannot read {constant!r}: {e}",
                call, 0, "constant",
            ) from None  # fmt: skip
    else:
        values = ip.deep_concrete(constant)
        if not isinstance(values, (list, tuple)):
            raise fail(
                "err_invalid_argument",
                f"nl.shared_constant: `constant` must be a .npy path or a nested list of "
                f"numbers, got {type_name(values)}",
                call, 0, "constant",
            )  # fmt: skip
        try:
            array = np.array(values)
        except ValueError as e:
            raise fail(
                "err_invalid_argument", f"nl.shared_constant: {e}", call, 0, "constant"
            ) from None
        if array.dtype.kind not in "biuf" or array.ndim == 0:
            raise fail(
                "err_invalid_argument",
                "nl.shared_constant: `constant` must be a rectangular list of numbers",
                call, 0, "constant",
            )  # fmt: skip
        array = array.astype({"b": np.uint8, "i": np.int32, "u": np.int32, "f": np.float32}[
            array.dtype.kind])  # fmt: skip
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        array = array.astype(np.int32)
    return np.ascontiguousarray(array.reshape(array.shape or (1,)))


@lowering("shared_constant")
def shared_constant(ip, call, constant):
    """A shared-HBM tensor with compile-time contents: a `.npy` file (a relative path is taken
    from the calling file's directory) or a nested list of numbers (ints as int32, floats as
    float32)."""
    return constant_tensor(ip, call, _constant_array(ip, call, constant), "shared_constant")


def _numpy_dtype(call, dtype: str):
    import ml_dtypes
    import numpy as np

    name = {"bool": "uint8", "tfloat32": "float32"}.get(dtype, dtype)
    found = getattr(np, name, None) or getattr(ml_dtypes, name, None)
    if found is None or DTYPES[dtype].kind == "packed":
        raise fail(
            "err_invalid_argument", f"nl.shared_identity_matrix: unsupported dtype {dtype}",
            call, 1, "dtype",
        )  # fmt: skip
    return found


@lowering("shared_identity_matrix")
def shared_identity_matrix(ip, call, n, dtype="uint8", dst=None):
    """The n x n identity in SBUF, as NKI documents it: a shared-HBM constant (one per
    (n, dtype) in a kernel) DMA-copied into `dst=` (an on-chip (n, n) tile), else into a new
    SBUF tile; the tile is returned."""
    import numpy as np

    n = ip.need_int(n, "an integer for `n`")
    if not 0 < n <= PMAX:
        raise fail(
            "err_invalid_argument", f"nl.shared_identity_matrix: `n` must be in 1..128, got {n}",
            call, 0, "n",
        )  # fmt: skip
    dtype = out_dtype(call, 1, dtype, "uint8")
    eye = np.eye(n).astype(_numpy_dtype(call, dtype))
    identity = constant_tensor(ip, call, eye, f"identity{n}")
    if dst is None:
        dst = new_tile(ip, call, (n, n), dtype, label=f"identity{n}")
        emit(ip, call, "dma_copy", dst=dst, src=identity)
        return dst
    dst = tile(call, 2, "dst", dst, "shared_identity_matrix")
    if dst.shape != (n, n):
        raise fail(
            "err_shape_mismatch",
            f"nl.shared_identity_matrix: `dst` has shape {show_shape(dst.shape)}, not ({n}, {n})",
            call, 2, "dst",
        )  # fmt: skip
    emit(ip, call, "dma_copy", dst=dst, src=identity)
    return dst


# ---------------------------------------------------------------------------------------------
# device_print


@lowering("device_print")
def device_print(ip, call, print_prefix, tensor):
    """Not simulated: validated, then a `nkic_device_print_ignored` warning; no instruction."""
    if not isinstance(print_prefix, str):
        raise fail(
            "err_invalid_argument",
            f"nl.device_print: `print_prefix` must be a constant string, got "
            f"{type_name(print_prefix)}",
            call, 0, "print_prefix",
        )  # fmt: skip
    tile(call, 1, "tensor", tensor, "device_print", ("sbuf", *HBM))
    ip._emit_diag(
        Diagnostic(
            "nkic_device_print_ignored",
            f"nl.device_print({print_prefix!r}, ...) is not simulated; nkic emits no "
            "instruction for it",
            ip.loc(call.node),
            "warning",
            "return the tensor from the kernel to inspect its values, or print() compile-time "
            "values",
        )
    )
