"""NKI 0.7.0 (Neuron 2.33): `nl.dynamic_range` removed (and with it `while reg:` loops); the
`NkiScalar` API added (`nisa.scalar_load`, `nisa.scalar_store`); the new tiling APIs that nkic
does not implement yet are named as such; `is` / `is not` compare any values, as kernels are
specialised as ordinary Python."""

from __future__ import annotations

from .. import nki_surface
from .nki_0_6 import NKI_0_6

_LOOPS = (
    "nl.fori_loop(lower, upper, body_fun) (or range() for a loop whose trip count is known "
    "at compile time)"
)

NKI_0_7 = NKI_0_6.derive(
    "NKI 0.7",
    "0.7",
    added={"nki.isa": nki_surface.scalar_bindings(), "nki.language": {"int64": "int64"}},
    removed={"nki.language": {"dynamic_range": _LOOPS}},
    unsupported={
        "nki.language": {
            "tiles": None,
            "blocks": None,
            "alloc_tiles": None,
            "alloc_blocks": None,
            "NkiGrid": None,
            "NkiTileGrid": None,
            "NkiBlockGrid": None,
        },
    },
    # the kernel body is ordinary Python (specialisation by tracing): `is` compares identity
    rules={"is_only_against_none": False},
)
