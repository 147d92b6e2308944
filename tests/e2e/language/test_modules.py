"""A kernel package (kernels/pkg): `__init__.py`, relative imports including `from ..x import
y` and `from .m import *`, a dataclass config and an enum passed from Python; each module is
evaluated once per compilation."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import nkic

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
    nkic.compile(
        str(KERNELS / "pkg/model/kernel.py"), x=X, cfg=pkg_config.BlockConfig(width=64)
    )
    assert capsys.readouterr().err.count("evaluating pkg.ops.tiles") == 1


def test_config_assertion_reaches_the_user(pkg_config):
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(KERNELS / "pkg/model/kernel.py"), x=X, cfg=pkg_config.BlockConfig(96))
    (d,) = e.value.diagnostics
    assert d.code == "err_assert_failed" and "512 columns are not a multiple of 96" in d.message
    assert d.loc.file.endswith("pkg/config.py")
    assert [s.file.rsplit("/", 2)[-2:] for s in d.loc.stack] == [["model", "kernel.py"]]
