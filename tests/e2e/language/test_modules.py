"""A kernel package (kernels/pkg): `__init__.py`, relative imports including `from ..x import
y` and `from .m import *`, a dataclass config and an enum passed from Python; each module is
evaluated once per compilation."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import nkic
from tests.deprecations import without_loop_deprecations

from .harness import KERNELS, rand, run

X = rand((96, 512), seed=15)


@pytest.fixture
def pkg_config():
    """kernels/pkg/config.py imported by Python (another test tree also has a `pkg`)."""
    saved = {k: v for k, v in sys.modules.items() if k == "pkg" or k.startswith("pkg.")}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(KERNELS))
    try:
        yield importlib.import_module("pkg.config")
    finally:
        sys.path.remove(str(KERNELS))
        for k in [k for k in sys.modules if k == "pkg" or k.startswith("pkg.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_package_kernel_with_defaults():
    got = run("pkg/model/kernel.py", "block_act", loops=1, x=X)
    np.testing.assert_allclose(got, np.exp(X), rtol=1e-5)


@pytest.mark.parametrize(
    ("width", "scale", "act", "cfg_act", "ref"),
    [
        (64, 0.5, "RELU", "COPY", lambda x: np.maximum(x * 0.5, 0)),
        (256, 2.0, "EXP", "COPY", lambda x: np.exp(x * 2.0)),
        (128, -1.0, "EXP", "RELU", lambda x: np.maximum(-x, 0)),
    ],
)
def test_dataclass_config_and_enum_from_python(pkg_config, width, scale, act, cfg_act, ref):
    cfg = pkg_config.BlockConfig(width, scale, pkg_config.Act[cfg_act])
    got = run("pkg/model/kernel.py", "block_act", x=X, cfg=cfg, act=pkg_config.Act[act])
    np.testing.assert_allclose(got, ref(X), rtol=1e-5, atol=1e-6)


def test_each_module_is_evaluated_once_per_compilation(pkg_config, capsys):
    nkic.compile(str(KERNELS / "pkg/model/kernel.py"), x=X, cfg=pkg_config.BlockConfig(width=64))
    assert capsys.readouterr().err.count("evaluating pkg.ops.tiles") == 1


def test_config_assertion_reaches_the_user(pkg_config):
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(KERNELS / "pkg/model/kernel.py"), x=X, cfg=pkg_config.BlockConfig(96))
    (d,) = without_loop_deprecations(e.value.diagnostics)
    assert d.code == "err_assert_failed" and "512 columns are not a multiple of 96" in d.message
    assert d.loc.file.endswith("pkg/config.py")
    assert [s.file.rsplit("/", 2)[-2:] for s in d.loc.stack] == [["model", "kernel.py"]]


def test_a_restarted_specialisation_prints_once(tmp_path, capsys):
    """A tile read after its symbolic loop restarts specialisation with the loop unrolled;
    modules and the kernel still print once, and the result is Python's."""
    (tmp_path / "noisy.py").write_text('print("evaluating noisy")\nK = 2\n')
    (tmp_path / "k.py").write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nfrom noisy import K\n\n\n"
        "@nki.jit\ndef k(x):\n"
        "    P, F = x.shape\n"
        '    print("specialising k")\n'
        "    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)\n"
        "    for i in nl.sequential_range(F // 32):\n"
        "        t = nl.ndarray((P, 32), x.dtype, buffer=nl.sbuf)\n"
        "        nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 32, 32)])\n"
        "        nisa.dma_copy(dst=out[:, nl.ds(i * 32, 32)], src=t)\n"
        "    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(K))\n"
        "    nisa.dma_copy(dst=out[:, F - 32 : F], src=t)\n"
        "    return out\n"
    )
    x = rand((128, 128), seed=18)
    kernel = nkic.compile(str(tmp_path / "k.py"), x=x)
    err = capsys.readouterr().err
    assert err.count("evaluating noisy") == 1 and err.count("specialising k") == 1
    want = x.copy()
    want[:, 96:] *= 2
    np.testing.assert_array_equal(kernel(x=x), want)


def test_import_star_honours_all(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(KERNELS))
    path = tmp_path / "star.py"
    path.write_text(
        "import nki\nfrom pkg.ops import *  # noqa: F403\n\n\n@nki.jit\ndef k(x):\n"
        "    load_block, store_block, activation_of  # noqa: B018, F405\n"
        "    unused_helper  # noqa: B018, F405\n"
    )
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), x=X)
    assert [(d.code, d.loc.line, d.loc.col) for d in e.value.diagnostics] == [
        ("err_undefined_name", 8, 5)
    ]
