"""NKI 0.6.0 (Neuron 2.32): `nl.fori_loop`, `nl.while_loop` and `nisa.topk` added;
`nl.dynamic_range` (and `while reg:`) deprecated in favour of the loops; `ncc.all_gather_v` named
as not implemented."""

from __future__ import annotations

from .. import nki_surface
from .nki_0_5 import NKI_0_5

NKI_0_6 = NKI_0_5.derive(
    "NKI 0.6",
    "0.6",
    added={
        "nki.language": nki_surface.dynamic_loop_bindings(),
        "nki.isa": {"topk": nki_surface.nisa_bindings()["topk"]},
    },
    deprecated={"nki.language": {"dynamic_range": "nl.fori_loop(lower, upper, body_fun)"}},
    unsupported={"nki.collectives": {"all_gather_v": "ncc.all_gather with equal-sized parts"}},
)
