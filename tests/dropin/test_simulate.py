"""Official simulator entry points on nkic: nki.simulate, NKI_SIMULATOR=1, mode="simulation",
kernel[lnc]; results compared with numpy."""

from __future__ import annotations

import nki
import numpy as np
import pytest
from dropin_kernels import add_kernel, double_in_place, out_of_bounds, scaled_diff

from nkic import CompileError, api, driver, standin

RNG = np.random.default_rng(7)


def _pair(shape=(128, 256)):
    return (
        RNG.standard_normal(shape).astype(np.float32),
        RNG.standard_normal(shape).astype(np.float32),
    )


def test_simulate_returns_numpy_like_the_official_simulator():
    a, b = _pair()
    got = nki.simulate(add_kernel)(a, b)
    assert type(got) is np.ndarray and got.dtype == np.float32
    np.testing.assert_array_equal(got, a + b)


def test_simulate_takes_a_plain_function_and_keywords():
    a, b = _pair()
    got = nki.simulate(add_kernel.__wrapped__)(b_input=b, a_input=a)
    np.testing.assert_array_equal(got, a + b)


def test_compile_time_arguments_pass_through_and_tuples_come_back():
    x, y = _pair((128, 64))
    diff, prod = nki.simulate(scaled_diff)(x, y, 0.5)
    np.testing.assert_allclose(diff, (x - y) * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(prod, x * y)


def test_direct_call_runs_on_the_simulator_under_nki_simulator(monkeypatch):
    a, b = _pair()
    monkeypatch.setenv("NKI_SIMULATOR", "1")
    np.testing.assert_array_equal(add_kernel(a, b), a + b)


def test_direct_call_without_the_simulator_says_how_to_run_it(monkeypatch):
    a, b = _pair()
    monkeypatch.delenv("NKI_SIMULATOR", raising=False)
    with pytest.raises(standin.NkiApiOutsideKernel) as e:
        add_kernel(a, b)
    assert "NKI_SIMULATOR=1" in str(e.value) and "nki.simulate(add_kernel)" in str(e.value)
    monkeypatch.setenv("NKI_SIMULATOR", "0")
    with pytest.raises(standin.NkiApiOutsideKernel):
        add_kernel(a, b)


def test_mode_simulation_simulates_direct_calls(monkeypatch):
    monkeypatch.delenv("NKI_SIMULATOR", raising=False)
    x, y = _pair((128, 64))
    diff, _ = scaled_diff(x, y, scale=2.0)
    np.testing.assert_allclose(diff, (x - y) * 2.0, rtol=1e-6)


def test_a_kernel_returning_nothing_updates_its_inputs_in_place():
    x = RNG.standard_normal((128, 32)).astype(np.float32)
    before = x.copy()
    assert nki.simulate(double_in_place)(x) is None
    np.testing.assert_array_equal(x, before * 2)


def test_lnc_grid():
    assert add_kernel[1].lnc == 1 and add_kernel[2].lnc == 2
    with pytest.raises(ValueError, match="LNC"):
        add_kernel[3]
    with pytest.raises(ValueError, match="LNC"):
        add_kernel[2, 2]


def test_lnc2_runs_each_core_on_its_rows(monkeypatch):
    from dropin_kernels import scale_halves

    x = RNG.standard_normal((256, 32)).astype(np.float32)
    want = np.concatenate([x[:128], 2 * x[128:]])
    np.testing.assert_array_equal(nki.simulate(scale_halves[2])(x), want)
    monkeypatch.setenv("NKI_SIMULATOR", "1")
    np.testing.assert_array_equal(scale_halves[2](x), want)
    np.testing.assert_array_equal(scale_halves(x[:128]), x[:128])  # one core: all rows × 1


def test_kernel_errors_are_compile_errors_with_the_source_line():
    with pytest.raises(CompileError) as e:
        nki.simulate(out_of_bounds)(np.zeros((64, 64), np.float32))
    (d,) = [d for d in e.value.diagnostics if d.severity == "error"]
    assert d.code == "err_tensor_access_out_of_bound"
    assert d.loc.file.endswith("dropin_kernels.py") and d.loc.line == 54


def test_wrong_arguments_are_a_type_error_naming_the_kernel():
    with pytest.raises(TypeError, match=r"add_kernel\(\)"):
        nki.simulate(add_kernel)(np.zeros((128, 4), np.float32))


def test_one_compilation_per_argument_signature(monkeypatch):
    calls = []
    real = api.compile_named
    monkeypatch.setattr(standin, "_CACHE", standin.OrderedDict())
    monkeypatch.setattr(api, "compile_named", lambda *a, **k: calls.append(1) or real(*a, **k))
    a, b = _pair((128, 16))
    for _ in range(3):
        np.testing.assert_array_equal(nki.simulate(add_kernel)(a, b), a + b)
    c, d = _pair((128, 8))
    np.testing.assert_array_equal(nki.simulate(add_kernel)(c, d), c + d)
    assert len(calls) == 2


@pytest.mark.parametrize(
    "value, target",
    [("trn1", "trn1"), ("inf2", "trn1"), ("gen3", "trn2"), ("TRN3", "trn3"), ("gen4", "trn3")],
)
def test_platform_target_override(monkeypatch, value, target):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", value)
    assert standin.simulation_target() == target


def test_platform_target_default_and_bad_value(monkeypatch):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    assert standin.simulation_target() == driver.DEFAULT_TARGET
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen9")
    with pytest.raises(ValueError, match="NEURON_PLATFORM_TARGET_OVERRIDE='gen9'"):
        nki.simulate(add_kernel)(*_pair((128, 4)))


def test_imprecise_mode_is_refused_with_a_warning(monkeypatch):
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    a, b = _pair((128, 4))
    with pytest.warns(UserWarning, match="NKI_PRECISE_FP=0 is not supported"):
        np.testing.assert_array_equal(nki.simulate(add_kernel)(a, b), a + b)


def test_a_returned_one_tuple_stays_a_tuple():
    from dropin_kernels import copy_as_tuple

    x = RNG.standard_normal((128, 16)).astype(np.float32)
    got = nki.simulate(copy_as_tuple)(x)
    assert isinstance(got, tuple) and len(got) == 1
    np.testing.assert_array_equal(got[0], x)
    assert not isinstance(nki.simulate(add_kernel)(x, x), tuple)
