"""Module-level (host) code: real NKI imports a kernel's modules with Python, so nkic evaluates
their top level without the kernel rules, and what it cannot evaluate (logging, os.environ,
pkgutil, `global`, np.load, try/except ImportError, ...) is an error only where kernel code
uses it. nkic still never runs the code with Python."""

import textwrap

import numpy as np

import nkic

INIT = """\
import importlib
import logging
import os
import pkgutil
import sys
from enum import Enum
from typing import TextIO

import numpy as np

_logger = logging.getLogger(__name__)
_SETUP = False
DEBUG = os.environ.get("KERNELS_DEBUG", "") == "1"
EPS = np.load("eps.npy")


def _setup():
    global _SETUP
    _logger.debug("setting up")
    _SETUP = True
    return True


try:
    import fancy_accelerator_extension as fancy
except ImportError:
    fancy = None

if not _setup():
    for _importer, _name, _ispkg in pkgutil.iter_modules(__path__):
        importlib.import_module(f".{_name}", __name__)


def report(stream: TextIO):
    stream.write("ok")


class Mode(Enum):
    DOUBLE = 1
    TRIPLE = 2


SCALE = {Mode.DOUBLE: 2.0, Mode.TRIPLE: 3.0}
"""

KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt

from . import SCALE, Mode


@nki.jit
def scale(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=SCALE[Mode.TRIPLE])
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def package(tmp_path, kernel: str = KERNEL):
    pkg = tmp_path / "kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(INIT)
    path = pkg / "scale.py"
    path.write_text(kernel)
    return path


def test_host_code_of_the_package_is_not_checked_as_kernel_code(tmp_path):
    path = package(tmp_path)
    assert nkic.check(path) == []
    a = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(path), kernel="scale")(a)
    np.testing.assert_allclose(out, a * 3.0, rtol=1e-6)


def test_a_kernel_using_what_host_code_could_not_bind_is_an_error_there(tmp_path):
    kernel = KERNEL.replace("from . import SCALE, Mode", "from . import EPS, SCALE, Mode")
    kernel = kernel.replace("operand0=SCALE[Mode.TRIPLE]", "operand0=EPS")
    path = package(tmp_path, kernel)
    (d,) = nkic.check(path)
    assert (d.code, d.loc.file, d.loc.line, d.loc.col) == ("err_unknown_api", str(path), 14, 65)
    assert d.message.startswith("'EPS' is bound by module-level code that nkic could not evaluate")
    assert "numpy has no attribute 'load'" in d.message
    (origin,) = d.related
    assert (origin.loc.file, origin.loc.line) == (str(path.parent / "__init__.py"), 14)


def test_a_helper_reaching_host_only_values_is_an_error_at_the_use(tmp_path):
    kernel = KERNEL.replace("from . import SCALE, Mode", "from . import SCALE, Mode, _logger")
    kernel = kernel.replace("    return out\n", '    _logger.info("done")\n    return out\n')
    path = package(tmp_path, kernel)
    (d,) = nkic.check(path)
    assert (d.code, d.loc.line, d.loc.col) == ("err_import_error", 16, 5)
    assert "'logging' is not available in kernels" in d.message


def test_kernel_rules_still_apply_to_kernel_code(tmp_path):
    kernel = KERNEL.replace("    return out\n", "    d = {Mode.DOUBLE: 1}\n    return out\n")
    (d,) = nkic.check(package(tmp_path, kernel))
    assert (d.code, d.loc.line) == ("err_type_error", 16)
    assert "dict keys must be strings" in d.message


def test_errors_nki_itself_raises_at_import_are_reported_at_once(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(
        textwrap.dedent(
            """\
            import nki
            import nki.language as nl
            from nki.language import arange

            BUFFER = nl.ndarray((128, 512), nl.float32)
            UNUSED = undefined_name + 1


            @nki.jit
            def k(a: nl.ndarray):
                pass
            """
        )
    )
    diags = nkic.check(path, kernel="k", a=nkic.TensorSpec((128, 512), "float32"))
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_unsupported_api", 3),  # removed from NKI: the import fails in NKI too
        ("err_nki_api_outside_of_nki_kernel", 5),
    ]


def test_without_shapes_a_use_of_what_host_code_could_not_bind_is_reported(tmp_path):
    kernel = KERNEL.replace("from . import SCALE, Mode", "from . import SCALE, Mode, _logger")
    kernel = kernel.replace("a: nt.tensor[128, 512]", "a")
    kernel = kernel.replace("    return out\n", '    _logger.info("done")\n    return out\n')
    diags = nkic.check(package(tmp_path, kernel))
    assert [(d.code, d.loc.line, d.loc.col) for d in diags if d.severity != "note"] == [
        ("err_import_error", 16, 5)
    ]
