"""Arrays from the frameworks kernel authors use, in and out of the simulator.

A tensor argument is anything array-like: a numpy array, a torch tensor, a jax array, or any
object with `.shape`, `.dtype` and `__array__` or `__dlpack__`. It is read as a numpy array
(torch bfloat16/fp8 tensors become ml_dtypes arrays bit for bit) and results go back to the
caller as the same kind of array as the first tensor argument.
"""

from __future__ import annotations

import sys

import numpy as np

#: torch dtypes numpy has no type for: the integer dtype of the same width to reinterpret the
#: bits through, and the ml_dtypes type (a numpy dtype name) they stand for.
_TORCH_BITS = {
    "bfloat16": ("int16", "bfloat16"),
    "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
    "float8_e5m2": ("uint8", "float8_e5m2"),
    "float8_e8m0fnu": ("uint8", "float8_e8m0fnu"),
}


def is_array(value: object) -> bool:
    """True for an array-like tensor argument (not a numpy scalar, not a 0-d array)."""
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    if isinstance(value, (type, np.generic)):
        return False
    if not (hasattr(value, "__array__") or hasattr(value, "__dlpack__")):
        return False
    shape = getattr(value, "shape", None)
    return hasattr(value, "dtype") and isinstance(shape, tuple) and len(shape) > 0


def _framework(value: object) -> str:
    return type(value).__module__.partition(".")[0]


def to_numpy(value: object) -> np.ndarray:
    """A numpy view (or copy, for a device tensor) of an array-like tensor argument."""
    if isinstance(value, np.ndarray):
        return value
    if _framework(value) == "torch":
        return _torch_to_numpy(value)
    try:
        return np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        if hasattr(value, "__dlpack__"):
            return np.from_dlpack(value)
        raise


def _torch_to_numpy(tensor) -> np.ndarray:
    torch = sys.modules["torch"]
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    name = str(t.dtype).removeprefix("torch.")
    if name in _TORCH_BITS:
        bits, ml_name = _TORCH_BITS[name]
        import ml_dtypes

        raw = t.contiguous().view(getattr(torch, bits)).numpy()
        return raw.view(getattr(ml_dtypes, ml_name))
    return t.numpy()


def like(array: np.ndarray, proto: object | None):
    """`array` as the same kind of array as `proto` (numpy when `proto` is None or numpy)."""
    if proto is None or isinstance(proto, np.ndarray):
        return array
    framework = _framework(proto)
    if framework == "torch":
        torch = sys.modules["torch"]
        name = array.dtype.name
        bits = {ml: b for b, ml in _TORCH_BITS.values()}.get(name)
        if bits is not None:
            raw = np.ascontiguousarray(array).view(bits)
            tensor = torch.from_numpy(raw).view(getattr(torch, name))
        else:
            tensor = torch.from_numpy(np.ascontiguousarray(array))
        return tensor.to(proto.device)
    if framework in ("jax", "jaxlib"):
        import jax.numpy as jnp

        return jnp.asarray(array)
    return array


def write_back(target: object, array: np.ndarray, name: str) -> None:
    """Copy `array` into the caller's input `target` in place; a TypeError for an immutable
    one (a jax array, a read-only numpy array), whose new contents could not reach the caller."""
    if isinstance(target, np.ndarray) and target.flags.writeable:
        np.copyto(target, array.astype(target.dtype, copy=False))
    elif _framework(target) == "torch":
        with sys.modules["torch"].no_grad():
            target.copy_(like(array, target))
    else:
        raise TypeError(
            f"the kernel returns nothing and writes its input {name!r} in place, but a "
            f"{type(target).__module__}.{type(target).__name__} cannot be updated in place: "
            "pass a numpy array or a torch tensor"
        )
