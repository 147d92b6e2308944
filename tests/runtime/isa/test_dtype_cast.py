"""nkirt.dtypes.cast / to_fp32 / pack_x4: exhaustive round trips and rounding boundaries."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt import dtypes

from .formats import E2M1, FORMATS, decode_all, round_nearest_even

UNSIGNED = {8: np.uint8, 16: np.uint16}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_code_decodes_and_round_trips(name):
    fmt = FORMATS[name]
    codes = np.arange(1 << fmt.bits, dtype=np.uint32).astype(UNSIGNED[fmt.bits])
    values = codes.view(dtypes.storage_dtype(name))
    as_fp32 = dtypes.to_fp32(values, name)
    want = decode_all(fmt)
    with np.errstate(invalid="ignore"):  # signalling NaN payloads
        np.testing.assert_array_equal(as_fp32.astype(np.float64), want)
    back = dtypes.cast(as_fp32, name).view(UNSIGNED[fmt.bits])
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(back[finite], codes[finite])
    assert np.isnan(dtypes.to_fp32(back[~finite].view(dtypes.storage_dtype(name)), name)).all()


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "uint16"])
def test_every_integer_round_trips_through_fp32(name):
    storage = dtypes.storage_dtype(name)
    codes = np.arange(1 << (8 * storage.itemsize), dtype=np.uint32)
    values = codes.astype(UNSIGNED[8 * storage.itemsize]).view(storage)
    as_fp32 = dtypes.to_fp32(values, name)
    np.testing.assert_array_equal(as_fp32, values.astype(np.int64).astype(np.float32))
    np.testing.assert_array_equal(dtypes.cast(as_fp32, name), values)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_fp32_narrowing_is_one_round_to_nearest_even(name):
    fmt = FORMATS[name]
    rng = np.random.default_rng(1)
    decoded = decode_all(fmt)
    finite = np.unique(np.abs(decoded[np.isfinite(decoded)]))
    midpoints = (finite[:-1] + finite[1:]) / 2
    ulp_below = np.nextafter(midpoints.astype(np.float32), np.float32(0))
    ulp_above = np.nextafter(midpoints.astype(np.float32), np.float32(np.inf))
    top = finite[-1]
    beyond = np.array([top + (top - finite[-2]) / 2, top * 1.01, top * 4, np.inf])
    random_bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    with np.errstate(invalid="ignore", over="ignore"):
        samples = _fp32_samples(midpoints, ulp_below, ulp_above, beyond, random_bits)
    got = dtypes.cast(samples, name).astype(np.float64)
    want = round_nearest_even(samples.astype(np.float64), fmt)
    np.testing.assert_array_equal(got, want)


def _fp32_samples(midpoints, ulp_below, ulp_above, beyond, random_bits):
    samples = np.concatenate(
        [
            midpoints,
            ulp_below,
            ulp_above,
            beyond,
            -midpoints,
            random_bits.view(np.float32).astype(np.float64),
        ]
    ).astype(np.float32)
    return samples[~np.isnan(samples)]


def test_bf16_ties_go_to_even_mantissa():
    one_plus_half_ulp = np.float32(1 + 2**-8)
    three_halves_ulp = np.float32(1 + 3 * 2**-8)
    got = dtypes.cast(np.array([one_plus_half_ulp, three_halves_ulp]), "bfloat16")
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, 1 + 2**-6])


def test_float64_sources_are_rounded_to_fp32_first():
    # 1 + 2^-8 + 2^-40 rounds up to bf16 directly, but is the tie 1 + 2^-8 once in fp32
    value = np.array([1 + 2**-8 + 2**-40])
    assert dtypes.cast(value, "bfloat16").astype(np.float32)[0] == 1.0


def test_fp8_overflow_depends_on_the_format():
    big = np.array([464.0, 480.0, 1e6, np.inf, -np.inf], dtype=np.float32)
    assert dtypes.cast(big, "float8_e4m3fn").astype(np.float32)[0] == 448
    assert np.isnan(dtypes.cast(big, "float8_e4m3fn").astype(np.float32)[1:]).all()
    e5m2 = dtypes.cast(np.array([57344, 61439, 61440, 1e6], np.float32), "float8_e5m2")
    np.testing.assert_array_equal(e5m2.astype(np.float32), [57344, 57344, np.inf, np.inf])
    e4m3 = dtypes.cast(np.array([240, 247, 248], np.float32), "float8_e4m3")
    np.testing.assert_array_equal(e4m3.astype(np.float32), [240, 240, np.inf])


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("int8", -128, 127),
        ("int16", -32768, 32767),
        ("int32", -(2**31), 2**31 - 1),
        ("uint8", 0, 255),
        ("uint16", 0, 65535),
        ("uint32", 0, 2**32 - 1),
        ("bool", 0, 255),
    ],
)
def test_float_to_integer_rounds_half_even_and_saturates(name, low, high):
    values = np.array(
        [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e12, -1e12, np.inf, -np.inf, np.nan, -0.0, 3.7],
        dtype=np.float32,
    )
    want = [0, 2, 2, 0, -2, -2, high, low, high, low, 0, 0, 4]
    want = np.clip(np.array(want), low, high)
    got = dtypes.cast(values, name)
    assert got.dtype == dtypes.storage_dtype(name)
    np.testing.assert_array_equal(got.astype(np.int64), want)


def test_integer_to_integer_saturates_exactly():
    values = np.array([-(2**31), -129, -1, 0, 200, 70000, 2**31 - 1], dtype=np.int32)
    np.testing.assert_array_equal(dtypes.cast(values, "int8"), [-128, -128, -1, 0, 127, 127, 127])
    np.testing.assert_array_equal(dtypes.cast(values, "uint16"), [0, 0, 0, 0, 200, 65535, 65535])


def test_int32_to_float32_rounds_to_nearest_even():
    values = np.array([2**24 + 1, 2**24 + 3, 2**31 - 1], dtype=np.int32)
    np.testing.assert_array_equal(dtypes.cast(values, "float32"), [2**24, 2**24 + 4, 2**31])


def test_tfloat32_keeps_ten_mantissa_bits_rounded_to_even():
    values = np.array(
        [1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, -(1 + 3 * 2**-11), 3.4028235e38, np.inf],
        dtype=np.float32,
    )
    want = np.array([1.0, 1 + 2**-9, 1 + 2**-10, -(1 + 2**-9), np.inf, np.inf], np.float32)
    got = dtypes.cast(values, "tfloat32")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert (got.view(np.uint32)[:4] & 0x1FFF == 0).all()


def test_tfloat32_nan_stays_nan_even_with_low_payload():
    payload_nan = np.array([0x7F800001], dtype=np.uint32).view(np.float32)
    assert np.isnan(dtypes.cast(payload_nan, "tfloat32")).all()


def test_same_storage_is_a_bit_copy():
    nan_payload = np.array([0x7FC01234, 0xFFFFFFFF, 0x80000000], dtype=np.uint32).view(np.float32)
    assert dtypes.cast(nan_payload, "float32").view(np.uint32).tolist() == [
        0x7FC01234,
        0xFFFFFFFF,
        0x80000000,
    ]
    bf16 = np.array([0x7FC1, 0x8000], dtype=np.uint16).view(ml_dtypes.bfloat16)
    assert dtypes.cast(bf16, "bfloat16").view(np.uint16).tolist() == [0x7FC1, 0x8000]


def test_negative_zero_survives_narrowing():
    got = dtypes.cast(np.array([-0.0], np.float32), "bfloat16").view(np.uint16)
    assert got[0] == 0x8000
    assert dtypes.cast(np.array([-0.0], np.float32), "float8_e4m3fn").view(np.uint8)[0] == 0x80


@pytest.mark.parametrize(
    ("name", "element"),
    [("float8_e4m3fn_x4", FORMATS["float8_e4m3fn"]), ("float8_e5m2_x4", FORMATS["float8_e5m2"])],
)
def test_pack_unpack_x4_puts_element_zero_in_the_low_byte(name, element):
    codes = np.arange(256, dtype=np.uint32).reshape(4, 64)
    values = np.array([[element.decode(int(c)) for c in row] for row in codes])
    words = dtypes.pack_x4(values.astype(np.float32), name)
    assert words.dtype == dtypes.storage_dtype(name) and words.shape == (4, 16)
    finite = np.isfinite(values.reshape(4, 16, 4)).all(axis=-1)
    want = (codes.reshape(4, 16, 4) << np.array([0, 8, 16, 24], dtype=np.uint32)).sum(axis=-1)
    np.testing.assert_array_equal(words[finite], want[finite])
    unpacked = dtypes.unpack_x4(words, name)
    np.testing.assert_array_equal(unpacked[np.isfinite(values)], values[np.isfinite(values)])


def test_fp4_x4_covers_all_sixteen_codes():
    codes = np.arange(16, dtype=np.uint16).reshape(1, 16)
    values = np.array([[E2M1.decode(int(c)) for c in codes[0]]], dtype=np.float32)
    words = dtypes.pack_x4(values, "float4_e2m1fn_x4")
    want = (codes.reshape(1, 4, 4) << np.array([0, 4, 8, 12], dtype=np.uint16)).sum(axis=-1)
    np.testing.assert_array_equal(words, want)
    np.testing.assert_array_equal(dtypes.unpack_x4(words, "float4_e2m1fn_x4"), values)


def test_fp4_saturates_at_six():
    words = dtypes.pack_x4(np.array([[7.0, -100.0, 5.0, 0.25]], np.float32), "float4_e2m1fn_x4")
    np.testing.assert_array_equal(dtypes.unpack_x4(words, "float4_e2m1fn_x4"), [[6, -6, 4, 0]])


def test_packed_types_only_accept_their_own_words():
    words = np.array([1, 2], dtype=np.uint32)
    assert dtypes.cast(words, "float8_e5m2_x4") is words
    with pytest.raises(ValueError, match="packed"):
        dtypes.cast(np.array([1.0], np.float32), "float8_e5m2_x4")
    with pytest.raises(ValueError, match="unpack_x4"):
        dtypes.to_fp32(words, "float8_e5m2_x4")


def test_every_e8m0_code_is_a_power_of_two_and_round_trips():
    codes = np.arange(256, dtype=np.uint32).astype(np.uint8)
    values = dtypes.to_fp32(codes.view(ml_dtypes.float8_e8m0fnu), "float8_e8m0fnu")
    want = [2.0 ** (int(c) - 127) for c in codes[:255]]
    np.testing.assert_array_equal(values[:255].astype(np.float64), want)
    assert np.isnan(values[255])
    back = dtypes.cast(values, "float8_e8m0fnu").view(np.uint8)
    np.testing.assert_array_equal(back, codes)


def test_name_of_storage():
    assert dtypes.name_of(np.dtype(np.float32)) == "float32"
    assert dtypes.name_of(np.dtype(np.uint8)) == "uint8"
    assert dtypes.name_of(np.dtype(ml_dtypes.bfloat16)) == "bfloat16"
    assert dtypes.name_of(np.dtype(np.uint32)) == "uint32"
