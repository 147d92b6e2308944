"""The language versions nkic accepts, by the name users select them with."""

from __future__ import annotations

from ..language import Language
from .nki_0_3 import NKI_0_3

LANGUAGES: dict[str, Language] = {NKI_0_3.version: NKI_0_3}
DEFAULT = NKI_0_3


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
