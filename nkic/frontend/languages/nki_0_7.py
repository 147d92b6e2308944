"""NKI 0.7.0 (Neuron 2.33): `nl.dynamic_range` removed (and with it `while reg:` loops); the new
scalar, tiling and collective APIs that nkic does not implement yet are named as such; `is` /
`is not` compare any values, as kernels are specialised as ordinary Python."""

from __future__ import annotations

from .. import nki_collectives
from .nki_0_6 import NKI_0_6

#: The prepare/trigger split of the variable-size collectives.
_SPLIT = {
    "all_to_all_v_prepare",
    "all_to_all_v_trigger",
    "all_gather_v_prepare",
    "all_gather_v_trigger",
}

_LOOPS = (
    "nl.fori_loop or nl.while_loop (not supported by nkic yet), or nl.sequential_range "
    "for a loop whose trip count is known at compile time"
)

NKI_0_7 = NKI_0_6.derive(
    "NKI 0.7",
    "0.7",
    added={
        "nki.collectives": {n: b for n, b in nki_collectives.bindings("0.7").items() if n in _SPLIT}
    },
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
            "int64": None,
        },
        "nki.isa": {"NkiScalar": None, "scalar_load": None, "scalar_store": None},
    },
    # the kernel body is ordinary Python (specialisation by tracing): `is` compares identity
    rules={"is_only_against_none": False},
)
