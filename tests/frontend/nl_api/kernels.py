"""Kernels written with the `nki.language` convenience APIs, compiled and run by the tests of
this folder. Compile-time arguments choose the API (`name`) and the `dtype=` of its result."""

import nki
import nki.isa as nisa
import nki.language as nl


def _out(y):
    out = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
    nl.store(out, y)
    return out


@nki.jit
def unary(x, name, dtype=None):
    """nl.<name>(x) of one tile."""
    fn = getattr(nl, name)
    t = nl.load(x)
    return _out(fn(t) if dtype is None else fn(t, dtype=dtype))


@nki.jit
def binary(a, b, name, dtype=None):
    """nl.<name>(a, b) of two tiles of the same shape."""
    fn = getattr(nl, name)
    x, y = nl.load(a), nl.load(b)
    return _out(fn(x, y) if dtype is None else fn(x, y, dtype=dtype))


@nki.jit
def with_scalar(a, name, scalar, scalar_first=False):
    """nl.<name>(tile, scalar) or nl.<name>(scalar, tile)."""
    fn = getattr(nl, name)
    x = nl.load(a)
    return _out(fn(scalar, x) if scalar_first else fn(x, scalar))


@nki.jit
def reduction(a, name, axis, keepdims=False, dtype=None):
    fn = getattr(nl, name)
    x = nl.load(a)
    if name == "all":
        return _out(fn(x, axis=axis, dtype=dtype))
    return _out(fn(x, axis=axis, dtype=dtype, keepdims=keepdims))


@nki.jit
def softmax(a, axis=-1):
    return _out(nl.softmax(nl.load(a), axis=axis))


@nki.jit
def rms_norm(a, w, n, epsilon=1e-6):
    x, g = nl.load(a), nl.load(w)
    return _out(nl.rms_norm(x, g, axis=1, n=n, epsilon=epsilon))


@nki.jit
def copy_and_cast(a, dtype=None):
    return _out(nl.copy(nl.load(a), dtype=dtype))


@nki.jit
def load_with_dtype(a, dtype):
    return _out(nl.load(a, dtype=dtype))


@nki.jit
def load_transposed(a):
    return _out(nl.load_transpose2d(a))


@nki.jit
def matmul(xT, y):
    """x @ y with x given transposed, (K, M): the result lands in PSUM, copied to SBUF."""
    product = nl.matmul(nl.load(xT), nl.load(y), transpose_x=True)
    return _out(nl.copy(product))


@nki.jit
def transpose(a):
    return _out(nl.copy(nl.transpose(nl.load(a))))


@nki.jit
def broadcast(a, shape):
    return _out(nl.broadcast_to(nl.load(a), shape))


@nki.jit
def expand_dims(a):
    """(P, F) -> (P, F, 1): a view, reduced back over the new axis."""
    t = nl.expand_dims(nl.load(a), 2)
    return _out(nl.sum(t, axis=2))


@nki.jit
def gather(a, idx):
    return _out(nl.gather_flattened(nl.load(a), nl.load(idx)))


@nki.jit
def where(c, a, b):
    return _out(nl.where(nl.load(c), nl.load(a), nl.load(b)))


@nki.jit
def where_scalar(c, a):
    return _out(nl.where(nl.load(c), nl.load(a), -1.0))


@nki.jit
def dropout(a, rate):
    return _out(nl.dropout(nl.load(a), rate))


@nki.jit
def rand(shape, dtype):
    seed = nl.full((1, 1), 7, dtype=nl.int32)
    nl.random_seed(seed)
    return _out(nl.rand(shape, dtype=dtype))


@nki.jit
def constant_table(a, values):
    """a + a constant tensor (shared HBM, baked into the neff) loaded into SBUF."""
    table = nl.load(nl.shared_constant(values))
    return _out(nl.add(nl.load(a), table))


@nki.jit
def constant_in_loop(a, values):
    """The same constant requested in every iteration of a hardware loop: one tensor."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 32):
        rows = slice(i * 32, (i + 1) * 32)
        table = nl.load(nl.shared_constant(values))
        nl.store(out[rows, :], nl.add(nl.load(a[rows, :]), table))
    return out


@nki.jit
def identity(n, dtype):
    eye = nl.ndarray((n, n), dtype=dtype, buffer=nl.sbuf)
    nl.shared_identity_matrix(n, dtype=dtype, dst=eye)
    return _out(eye)


@nki.jit
def transposed_by_identity(a):
    """a.T through the Tensor Engine: the identity nl.shared_identity_matrix puts in SBUF is
    the moving operand of a transposing matmul."""
    t = nl.load(a)
    eye = nl.shared_identity_matrix(a.shape[0], dtype=a.dtype)
    p = nl.ndarray((a.shape[1], a.shape[0]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=t, moving=eye, is_transpose=True)
    return _out(nl.copy(p))


@nki.jit
def printed(a):
    t = nl.load(a)
    nl.device_print("t", t)
    return _out(t)


@nki.jit
def tiled_exp(a):
    """nl calls inside a hardware loop over row blocks."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 64):
        rows = slice(i * 64, (i + 1) * 64)
        nl.store(out[rows, :], nl.exp(nl.load(a[rows, :])))
    return out
