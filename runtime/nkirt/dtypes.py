"""NKI dtype names, their numpy storage types, and the hardware's conversions between them.

Numerics are specified in docs/numerics.md; every choice made there is implemented here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nkirt.scratch import Scratch

#: NKI dtype name -> numpy dtype used to hold one element in simulated memory.
#: The packed x4 types are opaque 4-element words: stored as unsigned integers of their width.
STORAGE: dict[str, np.dtype] = {
    "bool": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "tfloat32": np.dtype(np.float32),
    "float32": np.dtype(np.float32),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
    "float8_e5m2_x4": np.dtype(np.uint32),
    "float8_e4m3fn_x4": np.dtype(np.uint32),
    "float4_e2m1fn_x4": np.dtype(np.uint16),
}

#: Packed x4 dtype -> the element type of each of its 4 lanes (lane 0 in the low bits).
PACKED_ELEMENT: dict[str, np.dtype] = {
    "float8_e5m2_x4": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e4m3fn_x4": np.dtype(ml_dtypes.float8_e4m3fn),
    "float4_e2m1fn_x4": np.dtype(ml_dtypes.float4_e2m1fn),
}

INTEGER_NAMES = frozenset({"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "int64"})

#: Storage dtype -> the NKI name it stands for when an operand's NKI dtype is not given
#: (float32 rather than tfloat32, plain unsigned words rather than bool or packed x4).
_NAME_OF_STORAGE: dict[np.dtype, str] = {
    dtype: name for name, dtype in STORAGE.items() if name not in ("bool", "tfloat32", "int64")
}
_NAME_OF_STORAGE.update({STORAGE[name]: name for name in ("uint16", "uint32")})

_TF32_DROPPED_BITS = 13


def storage_dtype(name: str) -> np.dtype:
    """The numpy dtype that stores one element of NKI dtype `name`."""
    return STORAGE[name]


def itemsize(name: str) -> int:
    return STORAGE[name].itemsize


def name_of(array_dtype: np.dtype) -> str:
    """The NKI dtype an array of storage dtype `array_dtype` holds (float32, not tfloat32;
    uint8, not bool; plain unsigned words, not packed x4)."""
    dtype = np.dtype(array_dtype)
    if dtype in _NAME_OF_STORAGE:
        return _NAME_OF_STORAGE[dtype]
    if dtype == np.float64:
        return "float32"
    if dtype.kind == "b":
        return "uint8"
    if dtype.kind in "iu":
        return "int32" if dtype.kind == "i" else "uint32"
    raise ValueError(f"no NKI dtype is stored as numpy {dtype}")


def is_integer(name: str) -> bool:
    return name in INTEGER_NAMES


def to_fp32(array: np.ndarray, dtype_name: str, scratch: Scratch | None = None) -> np.ndarray:
    """The engines' free input cast: each element of `array` (held in the storage of
    `dtype_name`) as float32. Integers above 2**24 round to nearest even, as in hardware.
    With `scratch`, a converted array is one of its temporaries."""
    if dtype_name in PACKED_ELEMENT:
        raise ValueError(f"to_fp32: packed dtype {dtype_name} has no scalar value; use unpack_x4")
    return _as_fp32(np.asarray(array), scratch)


def cast(array: np.ndarray, dtype_name: str, scratch: Scratch | None = None) -> np.ndarray:
    """Convert `array` to the storage of NKI dtype `dtype_name` as the hardware does.

    * An array already in the destination's storage dtype is returned bit-for-bit (tfloat32:
      its low 13 mantissa bits are rounded away, which is idempotent).
    * Float destinations: one round-to-nearest-even from the float32 value. A float64 source is
      first rounded to float32, because every engine produces fp32 values.
    * Integer destinations from floats: round-to-nearest-even, saturate to the range, NaN -> 0.
      From integers: exact, saturating. `bool` is stored and converted as `uint8`.
    * fp8 overflow follows the format (ml_dtypes): e4m3fn -> NaN, e4m3/e5m2 -> inf.

    With `scratch`, a float result is one of its temporaries (the same bits).
    """
    source = np.asarray(array)
    target = STORAGE[dtype_name]
    if dtype_name in PACKED_ELEMENT:
        if source.dtype == target:
            return source
        raise ValueError(f"cast: cannot convert {source.dtype} values to packed {dtype_name}")
    if dtype_name == "tfloat32":
        return _round_to_tf32(source)
    if source.dtype == target:
        return source
    if dtype_name in INTEGER_NAMES:
        return _to_integer(source, target)
    with np.errstate(over="ignore", invalid="ignore"):
        if scratch is None:
            return _as_fp32(source).astype(target)
        return scratch.astype(_as_fp32(source, scratch), target)


def _as_fp32(source: np.ndarray, scratch: Scratch | None = None) -> np.ndarray:
    if source.dtype == np.float32:
        return source
    with np.errstate(over="ignore", invalid="ignore"):
        if scratch is None:
            return source.astype(np.float32)
        return scratch.astype(source, np.float32)


def _round_to_tf32(source: np.ndarray) -> np.ndarray:
    bits = _as_fp32(source).view(np.uint32)
    dropped = np.uint32(_TF32_DROPPED_BITS)
    low_mask = np.uint32((1 << _TF32_DROPPED_BITS) - 1)
    half_minus_one = np.uint32((1 << (_TF32_DROPPED_BITS - 1)) - 1)
    keep_lsb = (bits >> dropped) & np.uint32(1)
    rounded = (bits + half_minus_one + keep_lsb) & ~low_mask
    is_nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    quiet_nan = (bits & ~low_mask) | np.uint32(0x00400000)
    return np.where(is_nan, quiet_nan, rounded).astype(np.uint32).view(np.float32)


def _to_integer(source: np.ndarray, target: np.dtype) -> np.ndarray:
    info = np.iinfo(target)
    if source.dtype.kind in "iub":
        wide = source.astype(np.int64)
        return np.clip(wide, info.min, info.max).astype(target)
    values = _as_fp32(source).astype(np.float64)
    values = np.where(np.isnan(values), 0.0, np.rint(values))
    return np.clip(values, info.min, info.max).astype(target)


def unpack_x4(words: np.ndarray, dtype_name: str) -> np.ndarray:
    """Split packed x4 words into their 4 elements as float32; the result has a trailing axis
    4× longer (element k of word w at index 4w+k; element 0 is in the lowest bits)."""
    element = PACKED_ELEMENT[dtype_name]
    words = np.asarray(words).astype(STORAGE[dtype_name])
    width = 32 // 4 if STORAGE[dtype_name].itemsize == 4 else 16 // 4
    lanes = [(words >> (width * k)) & ((1 << width) - 1) for k in range(4)]
    codes = np.stack(lanes, axis=-1).astype(np.uint8)
    values = codes.view(element).astype(np.float32)
    return values.reshape(*words.shape[:-1], words.shape[-1] * 4)


def pack_x4(values: np.ndarray, dtype_name: str) -> np.ndarray:
    """Round float values to the element type of `dtype_name` (RNE, per `cast` rules) and pack
    groups of 4 consecutive elements of the last axis into one word (inverse of unpack_x4)."""
    element = PACKED_ELEMENT[dtype_name]
    values = np.asarray(values)
    if values.shape[-1] % 4:
        raise ValueError(f"pack_x4: last axis {values.shape[-1]} is not a multiple of 4")
    codes = _as_fp32(values).astype(element).view(np.uint8).astype(np.uint32)
    if element.itemsize == 1 and dtype_name.startswith("float4"):
        codes &= np.uint32(0xF)
    grouped = codes.reshape(*values.shape[:-1], values.shape[-1] // 4, 4)
    width = 8 if STORAGE[dtype_name].itemsize == 4 else 4
    word = np.zeros(grouped.shape[:-1], dtype=np.uint32)
    for k in range(4):
        word |= grouped[..., k] << np.uint32(width * k)
    return word.astype(STORAGE[dtype_name])


def all_finite(array: np.ndarray) -> bool:
    """Whether a float array holds no Inf/NaN (integer and other arrays: True).

    For 8- and 16-bit formats a test on the raw bits (`_bits_test`), exactly numpy's
    `isfinite` (of the value widened to float32 for the ml_dtypes formats), made of reductions
    over integer views of the array: no temporary array, about 2x faster than a mask test for
    bf16, ~100x faster than numpy's float16 `isfinite` and ~200x than widening fp8 to float32.
    float32/64: numpy's `isfinite`, faster than the bits there."""
    test = _BITS_TESTS.get(array.dtype)
    if test is None:
        test = _BITS_TESTS[array.dtype] = _bits_test(array.dtype)
    kind = test[0]
    if kind == "none":
        return True
    if kind == "wide":
        if array.dtype.kind == "f":  # float32/64 (numpy's isfinite is faster than bits here)
            return bool(np.isfinite(array).all())
        with np.errstate(all="ignore"):
            return bool(np.isfinite(array.astype(np.float32)).all())
    signed, unsigned = _INTEGER_VIEWS[array.dtype.itemsize]
    if kind == "magnitude":
        # Inf/NaN: the bits without the sign at or above `threshold`; a positive one is the
        # signed view's largest value, a negative one above sign + threshold in the unsigned
        threshold, sign = test[1], 1 << (8 * array.dtype.itemsize - 1)
        return bool(
            array.view(signed).max(initial=0) < threshold
            and array.view(unsigned).max(initial=0) < sign + threshold
        )
    pattern = test[1]  # "pattern": the format's only non-finite bit pattern
    if pattern == 1 << (8 * array.dtype.itemsize - 1):  # the negative zero of fnuz formats
        return bool(array.view(signed).min(initial=0) > -pattern)
    if pattern == (1 << (8 * array.dtype.itemsize)) - 1:  # e8m0fnu's 0xFF
        return bool(array.view(unsigned).max(initial=0) < pattern)
    return not bool((array.view(unsigned) == pattern).any())


_INTEGER_VIEWS = {
    1: (np.int8, np.uint8),
    2: (np.int16, np.uint16),
    4: (np.int32, np.uint32),
    8: (np.int64, np.uint64),
}

#: dtype -> its finite test (`_bits_test`), made on first use
_BITS_TESTS: dict[np.dtype, tuple] = {}


def _bits_test(dtype: np.dtype) -> tuple:
    """How `all_finite` tests `dtype`: ("magnitude", threshold) where the non-finite patterns
    are exactly those whose bits without the sign bit are >= threshold (IEEE formats: the top
    exponent); ("pattern", p) where p is the only non-finite pattern (fnuz formats: NaN is the
    negative zero, no Inf; e8m0fnu: 0xFF); ("none",) for a format without Inf/NaN (integers);
    ("wide",) otherwise (numpy's `isfinite`, of the value widened to float32 for ml_dtypes).
    float16 is IEEE (threshold: the bits of +inf); the ml_dtypes formats of 8 and 16 bits are
    classified from every bit pattern."""
    if dtype.kind == "f" and dtype.itemsize == 2:  # numpy's float16 isfinite is ~100x slower
        return ("magnitude", int(np.array(np.inf, dtype).view(np.uint16)))
    if dtype.kind != "V" or dtype.type.__module__ != "ml_dtypes":
        return ("wide",) if dtype.kind == "f" else ("none",)
    if dtype.itemsize not in (1, 2):
        return ("wide",)
    unsigned = np.dtype(np.uint8 if dtype.itemsize == 1 else np.uint16)
    patterns = np.arange(1 << (8 * dtype.itemsize), dtype=np.int64)
    with np.errstate(all="ignore"):
        bad = ~np.isfinite(patterns.astype(unsigned).view(dtype).astype(np.float32))
    if not bad.any():
        return ("none",)
    magnitude = patterns & ((1 << (8 * dtype.itemsize - 1)) - 1)
    threshold = int(magnitude[bad].min())
    if np.array_equal(bad, magnitude >= threshold):
        return ("magnitude", threshold)
    if bad.sum() == 1:
        return ("pattern", int(patterns[bad][0]))
    return ("wide",)
