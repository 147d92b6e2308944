"""The `nl` calls whose Beta 1 meaning differs from NKI 0.3's, as lowerings over the 0.3 ones.

* Binary operations broadcast their tile operands numpy-style (`a[128, 512] + b[128, 1]`,
  `a[128, 512] + b[1, 512]`): each operand is first broadcast to the common shape.
* `nl.store` takes PSUM tiles too: the tile is copied to SBUF first (Beta 1 did the same).
* `nl.rand(shape)` defaults to float32.
* `nl.load` of a one-dimensional HBM view gives a column tile (n, 1).
* `nl.shared_constant(constant, dtype=)` converts the constant to `dtype`.
* `nl.matmul(x, y)` (transpose_x=False, the Beta 1 default) computes `x @ y`: `x` (M, K) is
  first transposed on the Tensor engine (`nc_transpose` into PSUM, copied back to SBUF), as
  the Beta 1 compiler inserted it; operands in PSUM are copied to SBUF first. As with
  `nisa.nc_matmul`, `psum_tile += nl.matmul(...)` accumulates in PSUM.
"""

from __future__ import annotations

from . import nl_data, nl_math
from .nl_lowering import LOWERINGS, emit, fail, new_tile, out_dtype, show_shape
from .tensors import TensorView


def _binary(name: str):
    base = LOWERINGS[name]

    def lower(ip, call, x, y, dtype=None):
        if isinstance(x, TensorView) and isinstance(y, TensorView) and x.shape != y.shape:
            shape = _common_shape(call, name, x.shape, y.shape)
            x = _broadcast(ip, call, x, shape, name, (0, "x"))
            y = _broadcast(ip, call, y, shape, name, (1, "y"))
        return base(ip, call, x, y, dtype)

    lower.__name__ = name
    return lower


def _common_shape(call, name: str, a: tuple, b: tuple) -> tuple:
    if len(a) != len(b) or any(m != n and 1 not in (m, n) for m, n in zip(a, b)):
        raise fail(
            "err_shape_mismatch",
            f"nl.{name}: tiles of shapes {show_shape(a)} and {show_shape(b)} do not broadcast",
            call,
            1,
            "y",
            "each dimension must be equal, or 1 in one of the tiles",
        )
    return tuple(max(m, n) for m, n in zip(a, b))


def _broadcast(ip, call, t: TensorView, shape: tuple, name: str, arg) -> TensorView:
    if t.shape == shape:
        return t
    return nl_data.broadcast_tile(ip, call, t, shape, t.dtype, name, arg)


def broadcast_to(ip, call, name: str, t: TensorView, shape: tuple) -> TensorView:
    """`t` broadcast to `shape` for `nl.<name>` (an error when it does not broadcast)."""
    if _common_shape(call, name, t.shape, shape) != tuple(shape):
        raise fail(
            "err_shape_mismatch",
            f"nl.{name}: a tile of shape {show_shape(t.shape)} cannot update one of shape "
            f"{show_shape(shape)} in place",
            call,
        )
    return _broadcast(ip, call, t, tuple(shape), name, (1, "y"))


def broadcast_to_lowering(ip, call, x, shape, dtype=None):
    """`nl.broadcast_to`: as NKI 0.3, except that a 4-byte integer row is broadcast across
    partitions exactly, through HBM (a DMA reading the stored row once per partition), where
    the Tensor engine would round it."""
    from ..ir.types import DTYPES
    from . import nki_api

    if (
        isinstance(x, TensorView)
        and x.on_chip
        and x.shape[0] == 1
        and DTYPES[x.dtype].is_int
        and DTYPES[x.dtype].itemsize == 4
    ):
        shape = nki_api.shape_arg(ip, shape)
        if len(shape) == len(x.shape) and shape[0] > 1 and tuple(shape[1:]) == x.shape[1:]:
            row = ip.alloc(x.shape, x.dtype, "hbm", "broadcast_row", None, call)
            emit(ip, call, "dma_copy", dst=row, src=x)
            rows = TensorView(row.tensor, row.offset, ((0, shape[0]), *row.pattern[1:]), x.dtype)
            dst = new_tile(ip, call, tuple(shape), out_dtype(call, 2, dtype, x.dtype))
            emit(ip, call, "dma_copy", dst=dst, src=rows)
            return dst
    return LOWERINGS["broadcast_to"](ip, call, x, shape, dtype)


def store(ip, call, dst, value):
    if isinstance(value, TensorView) and value.buffer == "psum":
        copy = new_tile(ip, call, value.shape, value.dtype)
        emit(ip, call, "tensor_copy", dst=copy, src=value)
        value = copy
    return LOWERINGS["store"](ip, call, dst, value)


def load(ip, call, src, dtype=None):
    if isinstance(src, TensorView) and len(src.shape) == 1 and not src.on_chip:
        # a 1-D HBM view (`t[0:128, j]`) loads as a column: its one dimension is the partition
        src = TensorView(src.tensor, src.offset, (*src.pattern, (1, 1)), src.dtype, src.dynamic)
    return LOWERINGS["load"](ip, call, src, dtype)


def in_sbuf(ip, call, t):
    """`t`, or its copy in a new SBUF tile when it is in PSUM (Tensor engine operands)."""
    if isinstance(t, TensorView) and t.buffer == "psum":
        copy = new_tile(ip, call, t.shape, t.dtype)
        emit(ip, call, "tensor_copy", dst=copy, src=t)
        return copy
    return t


def matmul(ip, call, x, y, *, transpose_x=False):
    """`x @ y`, or `x.T @ y` with transpose_x=True (Beta 1's documented semantics: "if False,
    an additional transpose will be inserted to make x's partition dimension the contract
    dimension")."""
    x, y = in_sbuf(ip, call, x), in_sbuf(ip, call, y)
    if transpose_x is False and isinstance(x, TensorView):
        x = in_sbuf(ip, call, nl_data.transpose(ip, call, x))
        transpose_x = True
    result = LOWERINGS["matmul"](ip, call, x, y, transpose_x)
    ip._beta1_matmul = (result, ip.builder.block[-1])  # `psum += nl.matmul(...)` accumulates
    return result


def rand(ip, call, shape, dtype="float32", buffer=None, name=""):
    return LOWERINGS["rand"](ip, call, shape, dtype, buffer, name)


def shared_constant(ip, call, constant, dtype=None):
    array = nl_data._constant_array(ip, call, constant)
    if dtype is not None:
        array = array.astype(nl_data._numpy_dtype(call, out_dtype(call, 1, dtype, "float32")))
    return nl_data.constant_tensor(ip, call, array, "shared_constant")


def shared_identity_matrix(ip, call, n, dtype="uint8"):
    """Beta 1's `nl.shared_identity_matrix(n, dtype)`: `nl.shared_constant` of the identity, a
    shared-HBM tensor (Beta 1 kernels `nl.load` it), not the SBUF tile of NKI 0.3+."""
    import numpy as np

    n = ip.need_int(n, "the size of nl.shared_identity_matrix")
    if not 0 < n <= 512:
        raise fail("err_invalid_argument", f"nl.shared_identity_matrix: size {n} outside 1..512",
                   call)  # fmt: skip
    kind = nl_data._numpy_dtype(call, out_dtype(call, 1, dtype, "uint8"))
    return nl_data.constant_tensor(ip, call, np.eye(n, dtype=kind), "identity")


#: The `nl` calls Beta 1 gives its own meaning, by name (bound as builtins of `nl`).
BUILTINS = (
    "load", "store", "rand", "shared_constant", "broadcast_to", "divide", "power", "matmul",
    "load_transpose2d", "shared_identity_matrix",
)  # fmt: skip


def lowerings() -> dict[str, object]:
    """The 0.3 lowerings with Beta 1's own in place."""
    table = dict(LOWERINGS)
    for name in (*nl_math.ARITHMETIC, *nl_math.COMPARISONS, *nl_math.BITWISE, *nl_math.LOGICAL):
        table[name] = _binary(name)
    table["store"] = store
    table["rand"] = rand
    table["load"] = load
    table["shared_constant"] = shared_constant
    table["broadcast_to"] = broadcast_to_lowering
    table["load_transpose2d"] = load_transpose2d
    table["shared_identity_matrix"] = shared_identity_matrix
    table["matmul"] = matmul
    return table


def load_transpose2d(ip, call, src, dtype=None):
    """`nl.load_transpose2d` of Beta 1, which also took 4-byte dtypes (its documented example
    transposes float32 data); the DMA moves them bit for bit, as it does 2-byte ones."""
    return nl_data.load_transpose2d(ip, call, src, dtype, itemsizes=(2, 4))
