"""The language versions nkic accepts, by the name users select them with (`--nki`, `nki=`)."""

from __future__ import annotations

from ..language import Language
from .nki_0_3 import NKI_0_3
from .nki_0_4 import NKI_0_4
from .nki_0_5 import NKI_0_5
from .nki_0_6 import NKI_0_6
from .nki_0_7 import NKI_0_7

LANGUAGES: dict[str, Language] = {
    lang.version: lang for lang in (NKI_0_3, NKI_0_4, NKI_0_5, NKI_0_6, NKI_0_7)
}
DEFAULT = NKI_0_7
VERSIONS = tuple(LANGUAGES)


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
