"""Helper modules and packages: relative imports, `import *`, a dataclass config and an enum
passed from Python, each module evaluated once by the specialiser."""

from __future__ import annotations

import importlib
import sys

import pytest

from nkic.ir.core import Loop

from .util import KERNELS, compile_ok, run, spec


@pytest.fixture
def pkg_config():
    sys.path.insert(0, str(KERNELS))
    try:
        yield importlib.import_module("pkg.config")
    finally:
        sys.path.remove(str(KERNELS))


def test_package_kernel_with_defaults():
    k = compile_ok("pkg/kernel.py", x=spec((256, 512)))
    outer = k.body[1]
    assert isinstance(outer, Loop) and outer.trip_count == 2
    inner = outer.body[0]
    acts = [op for op in inner.body if getattr(op, "opcode", None) == "activation"]
    assert [a.attrs["op"] for a in acts] == ["exp"]
    files = sorted(f.rsplit("/", 2)[-2] + "/" + f.rsplit("/", 1)[1] for f in k.files())
    assert files == ["ops/__init__.py", "ops/tiles.py", "pkg/kernel.py"]
    (alloc,) = [op for op in inner.body if hasattr(op, "result")]
    assert alloc.loc.file.endswith("ops/tiles.py") and alloc.loc.stack[0].line == 17


def test_python_dataclass_and_enum_arguments(pkg_config):
    cfg = pkg_config.TileConfig(rows=64, cols=128)
    k = compile_ok("pkg/kernel.py", x=spec((128, 256)), cfg=cfg, act=pkg_config.Activation.IDENTITY)
    outer = k.body[1]
    assert outer.trip_count == 2 and outer.body[0].trip_count == 2
    acts = [i for i in k.instructions() if i.opcode == "activation"]
    assert [a.attrs["op"] for a in acts] == ["copy"]
    assert acts[0].operands["dst"].shape == (64, 128)


def test_frozen_config_from_python_cannot_be_mutated(tmp_path, pkg_config):
    src = (KERNELS / "pkg" / "kernel.py").read_text()
    bad = KERNELS / "pkg" / "kernel_mutates.py"
    try:
        bad.write_text(
            src.replace(
                "    rows, cols = x.shape\n", "    rows, cols = x.shape\n    cfg.rows = 1\n"
            )
        )
        k, diags = run("pkg/kernel_mutates.py", x=spec((128, 256)), cfg=pkg_config.TileConfig())
    finally:
        bad.unlink()
    assert k is None
    assert [(d.code, d.loc.line) for d in diags] == [("err_attribute_error", 12)]


def test_each_module_is_evaluated_once(tmp_path):
    # a deprecated API at module level warns each time the module's code is evaluated
    (tmp_path / "noisy.py").write_text(
        "import nki.language as nl\nFMAX = nl.tile_size.psum_fmax\nVALUE = 3\n"
    )
    (tmp_path / "other.py").write_text("import noisy\nTWICE = noisy.VALUE * 2\n")
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import nki\nimport noisy\nfrom other import TWICE\nfrom noisy import *\n\n"
        "@nki.jit\ndef k(x):\n    assert noisy.VALUE == 3 and TWICE == 6 and VALUE == 3\n"
    )
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    sink = DiagnosticSink()
    assert specialise(str(kernel), None, {"x": spec((1, 1))}, "trn2", sink) is not None
    assert [d.code for d in sink.items] == ["nkic_deprecated_api"]


def test_top_level_prints_of_the_kernel_file_are_not_repeated_by_nkic(tmp_path, capsys):
    """Python prints a script's top-level output when the user runs it; nkic reading the file
    for the kernel's definitions stays silent (a print inside the kernel is shown, and helper
    modules print once, as on import: tests/e2e/language/test_modules.py)."""
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import nki\nprint('host output')\n\n@nki.jit\ndef k(x):\n    print('kernel output')\n"
    )
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    specialise(str(kernel), None, {"x": spec((1, 1))}, "trn2", DiagnosticSink())
    err = capsys.readouterr().err
    assert "host output" not in err and "kernel output" in err


def test_relative_import_beyond_package(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text("import nki\nfrom .utils import f\n\n@nki.jit\ndef k(x):\n    pass\n")
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    sink = DiagnosticSink()
    specialise(str(kernel), None, {"x": spec((1, 1))}, "trn2", sink)
    assert [(d.code, d.loc.line, d.loc.col) for d in sink.items] == [("err_import_error", 2, 1)]


def test_host_code_in_a_kernel_file_is_not_run(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import nki\nimport torch\nimport nkic\n\n@nki.jit\ndef k(x):\n    pass\n\n"
        "def host():\n    return torch.zeros(3)\n\n"
        'if __name__ == "__main__":\n    nkic.compile(k)(torch.zeros(3))\n'
    )
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    sink = DiagnosticSink()
    assert specialise(str(kernel), None, {"x": spec((1, 1))}, "trn2", sink) is not None
    assert not sink.items
