"""numpy, torch, jax and other array-likes in; the caller's kind of array out."""

from __future__ import annotations

import ml_dtypes
import nki
import numpy as np
import pytest
from dropin_kernels import add_kernel, double_in_place

import nkic
from nkic import arrays

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(3)


def _bf16_pair(shape=(128, 64)):
    a = RNG.standard_normal(shape).astype(BF16)
    b = RNG.standard_normal(shape).astype(BF16)
    return a, b


def _bf16_sum(a, b):
    """The hardware's bf16 add: exact float32 sum, rounded to nearest even."""
    return (a.astype(np.float32) + b.astype(np.float32)).astype(BF16)


class Duck:
    """Only `__array__`, `.shape` and `.dtype`, as in the documented protocol."""

    def __init__(self, array):
        self._a = array
        self.shape, self.dtype = array.shape, array.dtype

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


def test_any_array_like_is_a_tensor():
    a, b = (RNG.standard_normal((128, 16)).astype(np.float32) for _ in range(2))
    got = nki.simulate(add_kernel)(Duck(a), Duck(b))
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, a + b)


def test_not_tensors():
    assert not arrays.is_array(np.float32(1))
    assert not arrays.is_array(np.zeros(()))
    assert not arrays.is_array(nkic.TensorSpec((2, 2), "float32"))
    assert not arrays.is_array(np.ndarray)


def test_numpy_bf16_stays_bf16():
    a, b = _bf16_pair()
    got = nki.simulate(add_kernel)(a, b)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), _bf16_sum(a, b).view(np.uint16))


def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    a, b = (RNG.standard_normal((128, 32)).astype(np.float32) for _ in range(2))
    got = nki.simulate(add_kernel)(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), a + b)


def test_torch_bf16_is_bit_exact_both_ways():
    torch = pytest.importorskip("torch")
    a, b = _bf16_pair()
    ta = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)
    got = nki.simulate(add_kernel)(ta, tb)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    np.testing.assert_array_equal(got.view(torch.int16).numpy(), _bf16_sum(a, b).view(np.int16))
    # and torch's own bf16 add agrees with the reference
    np.testing.assert_array_equal(
        got.view(torch.int16).numpy(), (ta + tb).view(torch.int16).numpy()
    )


def test_torch_fp8_is_read_bit_exact():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 8)).astype(ml_dtypes.float8_e4m3fn)
    t = torch.from_numpy(x.view(np.uint8)).view(torch.float8_e4m3fn)
    back = arrays.to_numpy(t)
    assert back.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))
    again = arrays.like(back, t)
    assert again.dtype == torch.float8_e4m3fn
    np.testing.assert_array_equal(again.view(torch.uint8).numpy(), x.view(np.uint8))


def test_torch_input_updated_in_place():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(RNG.standard_normal((128, 8)).astype(np.float32))
    before = x.clone()
    assert nki.simulate(double_in_place)(x) is None
    assert torch.equal(x, before * 2)


def test_torch_requires_grad_tensors_are_read():
    torch = pytest.importorskip("torch")
    a = torch.ones((128, 8), requires_grad=True)
    got = nki.simulate(add_kernel)(a, a)
    assert torch.equal(got, torch.full((128, 8), 2.0))


def test_nkic_compile_takes_torch_too():
    torch = pytest.importorskip("torch")
    a = torch.arange(128 * 4, dtype=torch.float32).reshape(128, 4)
    kernel = nkic.compile(add_kernel, a, a)
    got = kernel(a, a)
    assert isinstance(got, torch.Tensor) and torch.equal(got, a * 2)


def test_jax_arrays_in_and_out():
    jnp = pytest.importorskip("jax.numpy")
    a, b = _bf16_pair((128, 16))
    got = nki.simulate(add_kernel)(jnp.asarray(a), jnp.asarray(b))
    assert type(got).__module__.startswith("jax") and got.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), _bf16_sum(a, b).view(np.uint16))


def test_immutable_inputs_of_an_in_place_kernel_are_refused():
    x = np.ones((128, 8), np.float32)
    x.flags.writeable = False
    with pytest.raises(TypeError, match="writes its input 'x' in place"):
        nki.simulate(double_in_place)(x)
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(TypeError, match="jax"):
        nki.simulate(double_in_place)(jnp.ones((128, 8), jnp.float32))
