"""What changed between NKI versions and what only trn3 runs: nl.rsqrt on GpSimd from 0.5 (no
PSUM input), nl.float8_e8m0fnu from 0.5 (engines read it on trn3), activation(prelu) needs
activate2, abs_max as op0 of tensor_scalar_reduce on trn3."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkic

from .helpers import KERNELS

FILE = KERNELS / "versions.py"
X = (np.random.default_rng(21).random((128, 64)) + 0.25).astype(np.float32)


def errors(diags):
    return [(d.code, d.message) for d in diags if d.severity == "error"]


@pytest.mark.parametrize(("nki", "engine"), [("0.4", "activation"), ("0.5", "tensor_scalar")])
def test_rsqrt_engine_follows_the_version(nki, engine):
    k = nkic.compile(FILE, X, kernel="rsqrt_of", nki=nki)
    assert f"{engine}[" in k.ir and ("tensor_scalar[gpsimd](" in k.ir) == (
        engine == "tensor_scalar"
    )
    np.testing.assert_allclose(k(X), 1 / np.sqrt(X.astype(np.float64)), rtol=2e-6)


def test_rsqrt_of_psum_is_rejected_from_0_5():
    assert errors(nkic.check(FILE, kernel="rsqrt_of", a=X, buf="psum", nki="0.4")) == []
    for nki in ("0.5", "0.7"):
        ((code, message),) = errors(nkic.check(FILE, kernel="rsqrt_of", a=X, buf="psum", nki=nki))
        assert code == "err_unsupported_memory" and "GpSimd" in message and "PSUM" in message


def test_float8_e8m0fnu_is_new_in_0_5_and_engines_read_it_on_trn3():
    a = np.full((128, 16), 0x7F, np.uint8).view(ml_dtypes.float8_e8m0fnu)
    (code, message), *_ = errors(nkic.check(FILE, kernel="e8m0_copy", a=a, nki="0.4"))
    assert code == "err_unknown_api" and "new in NKI 0.5" in message
    on_trn2 = errors(nkic.check(FILE, kernel="e8m0_copy", a=a, target="trn2"))
    assert [code for code, _ in on_trn2] == ["err_unsupported_on_target"] * 2  # dst and src
    assert all(m.startswith("tensor_copy: ") and "trn3 only" in m for _, m in on_trn2)
    k = nkic.compile(FILE, a, kernel="e8m0_copy", target="trn3")
    np.testing.assert_array_equal(k(a).view(np.uint8), a.view(np.uint8))


def test_prelu_needs_the_slope_of_activate2():
    ((code, message),) = errors(nkic.check(FILE, kernel="prelu_activation", a=X))
    assert code == "err_unsupported_operator" and "activate2" in message


def test_abs_max_as_op0_of_tensor_scalar_reduce_is_trn3_only():
    ((code, message),) = errors(nkic.check(FILE, kernel="abs_max_reduce", a=X, target="trn2"))
    assert code == "err_unsupported_on_target" and "op0=nl.abs_max" in message
    y = X - 0.75
    k = nkic.compile(FILE, y, kernel="abs_max_reduce", target="trn3")
    magnitude = np.maximum(np.abs(y), np.float32(0.5)).astype(np.float32)
    np.testing.assert_allclose(k(y)[:, 0], magnitude.sum(axis=1, dtype=np.float64), rtol=1e-5)


def test_dma_transpose_destination_rank_is_exact_from_0_4():
    a = np.random.default_rng(22).standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    k = nkic.compile(FILE, a, kernel="transpose_padded", nki="0.3")
    np.testing.assert_array_equal(k(a), a.T)
    for nki in ("0.4", "0.7"):
        ((code, message),) = errors(nkic.check(FILE, kernel="transpose_padded", a=a, nki=nki))
        assert code == "err_shape_mismatch" and "rank included" in message


@pytest.mark.parametrize(
    ("shape", "legal"),
    [
        ((16, 128), ("0.3", "0.5", "0.6", "0.7")),
        ((16, 64), ("0.6", "0.7")),
        ((8, 2, 64), ("0.6", "0.7")),
        ((8, 64), ()),
        ((4, 2, 64), ()),
    ],
)
def test_hardware_dge_transpose_shapes_follow_the_version(shape, legal):
    a = np.random.default_rng(23).standard_normal(shape).astype(ml_dtypes.bfloat16)
    for nki in ("0.3", "0.5", "0.6", "0.7"):
        found = errors(nkic.check(FILE, kernel="transpose_hwdge", a=a, nki=nki))
        if nki in legal:
            assert found == []
            np.testing.assert_array_equal(
                nkic.compile(FILE, a, kernel="transpose_hwdge", nki=nki)(a),
                a.transpose(tuple(reversed(range(a.ndim)))),
            )
        else:
            ((code, message),) = found
            assert code == "err_shape_mismatch" and "hardware-DGE transpose" in message


@pytest.mark.parametrize(("nki", "text"), [("0.3", "new in NKI 0.4"), ("0.7", "vector_offset")])
def test_dma_compute_oob_skip(nki, text):
    a = np.zeros((128, 64), np.float32)
    ((code, message),) = errors(nkic.check(FILE, kernel="dma_compute_skip", a=a, b=a, nki=nki))
    assert code == "err_invalid_argument" and text in message


def test_tensor_scalar_reduce_may_leave_its_result_in_the_accumulator_from_0_6():
    rng = np.random.default_rng(24)
    x, y = (rng.standard_normal((32, 16)).astype(np.float32) for _ in range(2))
    path = KERNELS / "accumulators.py"
    kernel = "reduce_kept_in_the_accumulator"
    k = nkic.compile(path, x, y, kernel=kernel, target="trn3")
    want = x.sum(axis=1, dtype=np.float64) + np.exp(y.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(k(x, y)[:, 0], want, rtol=1e-5)
    ((code, message),) = errors(nkic.check(path, kernel=kernel, x=x, y=y, target="trn3", nki="0.5"))
    assert code == "err_missing_argument" and "new in NKI 0.6" in message


def test_bypass_is_an_activation_function_on_trn3():
    ((code, message),) = errors(nkic.check(FILE, kernel="bypass_activation", a=X, target="trn2"))
    assert code == "err_unsupported_on_target" and "nl.bypass" in message
    k = nkic.compile(FILE, X, kernel="bypass_activation", target="trn3")
    np.testing.assert_array_equal(k(X), X * np.float32(2.0))
