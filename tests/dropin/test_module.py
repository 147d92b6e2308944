"""The stand-in `nki` behaves like a module: tools that walk modules work after a kernel module
is imported (each check in a fresh interpreter, so that nothing was imported before)."""

from __future__ import annotations

import nki
import nki.language as nl
import pytest

from nkic.shim import ROOT
from nkic.standin import ApiName, NkiApiOutsideKernel


def test_dunder_and_private_names_raise_attribute_error():
    for mod in (nki, nl, nki.isa, nki.typing, nki.collectives):
        with pytest.raises(AttributeError):
            mod.__no_such_dunder__  # noqa: B018
        with pytest.raises(AttributeError):
            mod._private  # noqa: B018
        assert not hasattr(mod, "__wrapped__")
    with pytest.raises(AttributeError):
        nl.add.__func__  # noqa: B018
    assert nki.__file__ == str(ROOT / "nki" / "__init__.py")
    assert nl.__file__ == str(ROOT / "nki" / "language.py")
    assert nki.__path__ == [str(ROOT / "nki")]


def test_public_names_are_inert_api_names():
    assert isinstance(nl.bfloat16, ApiName) and repr(nl.bfloat16) == "nki.language.bfloat16"
    assert repr(nki.isa.reduce_cmd.reset_reduce) == "nki.isa.reduce_cmd.reset_reduce"
    with pytest.raises(NkiApiOutsideKernel, match="nki.language.add"):
        nl.add(1, 2)
    assert nki.language is nl and nki.NKI_STANDIN is True


def test_star_import_gives_only_the_public_api():
    space: dict = {}
    exec("from nki.language import *", space)
    assert sorted(k for k in space if k != "__builtins__") == ["NKIObject"]


@pytest.mark.parametrize(
    "check",
    [
        "import inspect; assert len(inspect.stack()) >= 1",
        "import pydoc; assert 'add_kernel' in pydoc.render_doc(dropin_kernels)",
        "import pydoc; assert 'simulate' in pydoc.render_doc(nki)",
        "import pydoc; assert 'nki.language' in pydoc.render_doc(nki.language)",
        "import inspect; assert inspect.getmodule(dropin_kernels.add_kernel) is dropin_kernels",
        "import torch; assert torch.ones(2).sum().item() == 2",
    ],
)
def test_tools_work_after_a_kernel_module_is_imported(python, check):
    if "torch" in check:
        pytest.importorskip("torch")
    res = python(f"import nkic, nki, dropin_kernels\n{check}\nprint('ok')")
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
