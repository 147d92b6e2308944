"""The language versions nkic accepts, by the name users select them with (`--nki`, `nki=`);
Beta 1 is selected by a file's imports."""

from __future__ import annotations

from ..language import Language
from .beta1 import BETA1
from .nki_0_3 import NKI_0_3
from .nki_0_4 import NKI_0_4
from .nki_0_5 import NKI_0_5
from .nki_0_6 import NKI_0_6
from .nki_0_7 import NKI_0_7

#: The `nki.*` versions, selected with `--nki` / `nki=` (oldest first).
VERSIONS = tuple(lang.version for lang in (NKI_0_3, NKI_0_4, NKI_0_5, NKI_0_6, NKI_0_7))
LANGUAGES: dict[str, Language] = {
    **{lang.version: lang for lang in (NKI_0_3, NKI_0_4, NKI_0_5, NKI_0_6, NKI_0_7)},
    BETA1.version: BETA1,
}
DEFAULT = NKI_0_7


def get(version: str | Language | None) -> Language:
    """The language `version` names (a `Language` is returned as is; None is the default)."""
    if version is None:
        return DEFAULT
    if isinstance(version, Language):
        return version
    try:
        return LANGUAGES[version]
    except KeyError:
        known = ", ".join(LANGUAGES)
        raise ValueError(f"unknown NKI version {version!r} (known: {known})") from None


def for_file(tree, version: str | Language | None) -> Language:
    """The language of a parsed file: the one asked for, else Beta 1 when the file imports
    `neuronxcc.nki` (or `nki_jit` from `torch_neuronx`) and not `nki` (a file importing both is
    a current file whose Beta 1 import is reported), else the default."""
    if version is not None:
        return get(version)
    if imports_beta1(tree) and not imports_current(tree):
        return BETA1
    return DEFAULT


def imports_current(tree) -> bool:
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name == "nki" or a.name.startswith("nki.") for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "nki" or node.module.startswith("nki."):
                return True
    return False


def imports_beta1(tree) -> bool:
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(
                a.name == "neuronxcc.nki" or a.name.startswith("neuronxcc.nki.") for a in node.names
            ):
                return True
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "neuronxcc" and any(a.name == "nki" for a in node.names):
                return True
            if node.module == "neuronxcc.nki" or node.module.startswith("neuronxcc.nki."):
                return True
            if node.module == "torch_neuronx" and any(a.name == "nki_jit" for a in node.names):
                return True  # torch-neuronx's kernel decorator of the Beta 1 era
    return False
