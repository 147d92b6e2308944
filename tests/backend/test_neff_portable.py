"""A `.neff` does not depend on where its sources live: no absolute paths inside."""

import shutil
from pathlib import Path

import nkirt

from nkic import driver
from nkic.frontend import TensorSpec

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "tests" / "frontend" / "kernels" / "pkg"


def _compile(path: Path, **args) -> bytes:
    res = driver.compile_file(str(path), None, args)
    assert res.ok, res.diagnostics
    return res.neff


def test_same_kernel_in_two_checkouts_gives_identical_bytes(tmp_path):
    a = tmp_path / "one" / "tensor_add.py"
    b = tmp_path / "elsewhere" / "deeper" / "tensor_add.py"
    for dst in (a, b):
        dst.parent.mkdir(parents=True)
        shutil.copy(ROOT / "examples" / "tensor_add.py", dst)
    spec = TensorSpec((128, 512), "float32")
    neff_a, neff_b = _compile(a, a=spec, b=spec), _compile(b, a=spec, b=spec)
    assert neff_a == neff_b
    assert nkirt.load(neff_a).files == ["tensor_add.py"]


def test_helper_modules_are_named_relative_to_their_common_directory(tmp_path):
    spec = TensorSpec((256, 512), "float32")
    neffs = []
    for where in ("x", "y/z"):
        dst = tmp_path / where / "pkg"
        shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns("__pycache__", "kernel_*.py"))
        neffs.append(_compile(dst / "kernel.py", x=spec))
    assert neffs[0] == neffs[1]
    files = nkirt.load(neffs[0]).files
    assert sorted(files) == ["kernel.py", "ops/__init__.py", "ops/tiles.py"]
    assert str(tmp_path) not in str(files)
