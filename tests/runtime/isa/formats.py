"""Independent bit-level models of the narrow float formats, written from their definitions
(sign / exponent / mantissa fields), used as references for nkirt.dtypes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    ieee_specials: bool  # all-ones exponent = inf/NaN
    nan_codes_only_all_ones: bool = False  # e4m3fn: only S.1111.111 is NaN

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    def decode(self, code: int) -> float:
        sign = -1.0 if code >> (self.bits - 1) & 1 else 1.0
        exponent = (code >> self.mantissa_bits) & ((1 << self.exponent_bits) - 1)
        mantissa = code & ((1 << self.mantissa_bits) - 1)
        top = (1 << self.exponent_bits) - 1
        if self.ieee_specials and exponent == top:
            return sign * np.inf if mantissa == 0 else np.nan
        if (
            self.nan_codes_only_all_ones
            and exponent == top
            and mantissa == (1 << self.mantissa_bits) - 1
        ):
            return np.nan
        if exponent == 0:
            return sign * mantissa / (1 << self.mantissa_bits) * 2.0 ** (1 - self.bias)
        return sign * (1 + mantissa / (1 << self.mantissa_bits)) * 2.0 ** (exponent - self.bias)

    def overflow_value(self) -> float:
        """What a value rounding past the largest finite magnitude becomes."""
        return np.inf if self.ieee_specials else np.nan


FORMATS = {
    "bfloat16": FloatFormat("bfloat16", 8, 7, 127, True),
    "float16": FloatFormat("float16", 5, 10, 15, True),
    "float8_e5m2": FloatFormat("float8_e5m2", 5, 2, 15, True),
    "float8_e4m3": FloatFormat("float8_e4m3", 4, 3, 7, True),
    "float8_e4m3fn": FloatFormat("float8_e4m3fn", 4, 3, 7, False, True),
}

E2M1 = FloatFormat("float4_e2m1fn", 2, 1, 1, False)


def decode_all(fmt: FloatFormat) -> np.ndarray:
    return np.array([fmt.decode(c) for c in range(1 << fmt.bits)], dtype=np.float64)


def round_nearest_even(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Reference RNE of float64 `values` to `fmt`, returned as float64 values."""
    decoded = decode_all(fmt)
    positive_codes = [c for c in range(1 << (fmt.bits - 1)) if np.isfinite(decoded[c])]
    magnitudes = decoded[positive_codes]
    order = np.argsort(magnitudes)
    magnitudes = magnitudes[order]
    codes = np.array(positive_codes)[order]
    top_gap = magnitudes[-1] - magnitudes[-2]
    # one virtual step past the largest finite value stands for overflow
    magnitudes = np.append(magnitudes, magnitudes[-1] + top_gap)
    codes = np.append(codes, codes[-1] + 1)
    m = np.abs(values)
    hi = np.clip(np.searchsorted(magnitudes, m), 0, len(magnitudes) - 1)
    lo = np.maximum(hi - 1, 0)
    with np.errstate(invalid="ignore"):
        d_lo, d_hi = m - magnitudes[lo], magnitudes[hi] - m
        nearer_lo = (d_lo < d_hi) | ((d_lo == d_hi) & (codes[lo] % 2 == 0))
    pick = np.where((magnitudes[hi] == m) | ~nearer_lo, hi, lo)
    overflow = (pick == len(magnitudes) - 1) | (m >= magnitudes[-1])
    result = np.where(overflow, fmt.overflow_value(), magnitudes[pick])
    result = np.where(np.isnan(result), np.nan, np.copysign(result, values))
    return np.where(np.isnan(values), np.nan, result)
