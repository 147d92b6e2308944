"""Packaging: one version everywhere, the licence in the metadata, outputs in a named folder."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import nkic
from nkic.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def test_version_has_one_source():
    assert nkic.__version__ == importlib.metadata.version("nkic")
    res = CliRunner().invoke(cli, ["--version"])
    assert res.output.strip() == f"nkic, version {nkic.__version__}"


def test_licence_is_apache_and_declared():
    meta = importlib.metadata.metadata("nkic")
    assert meta["License-Expression"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_ir_is_a_regular_package():
    import nkic.ir

    assert nkic.ir.__file__.endswith("__init__.py")


def test_run_writes_outputs_into_a_named_directory(tmp_path):
    neff = tmp_path / "add.neff"
    spec = ["--arg", "a=float32[128,64]", "--arg", "b=float32[128,64]"]
    ex = str(ROOT / "examples" / "tensor_add.py")
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "nkic", *a], cwd=tmp_path, capture_output=True, text=True
    )
    assert run("compile", ex, *spec, "-o", str(neff)).returncode == 0
    res = run("run", str(neff), "--seed", "1")
    assert res.returncode == 0, res.stderr
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.npy"))
    assert written == ["nkic-out/c.npy"]
    assert np.load(tmp_path / "nkic-out" / "c.npy").shape == (128, 64)
    (tmp_path / "nkic-out" / "c.npy").unlink()
    (tmp_path / "nkic-out").rmdir()
    res = run("run", str(neff), "--timing-only")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.neff"]  # nothing written
