"""NKI 0.6.0 (Neuron 2.32): `nl.fori_loop`, `nl.while_loop` and `nisa.topk` added;
`nl.dynamic_range` (and `while reg:`) deprecated in favour of the loops; `ncc.all_gather_v`."""

from __future__ import annotations

from .. import nki_collectives, nki_surface
from .nki_0_5 import NKI_0_5

_NEW = {"all_gather_v"}
NKI_0_6 = NKI_0_5.derive(
    "NKI 0.6",
    "0.6",
    added={
        "nki.language": nki_surface.dynamic_loop_bindings(),
        "nki.isa": {"topk": nki_surface.nisa_bindings()["topk"]},
        "nki.collectives": {n: b for n, b in nki_collectives.bindings("0.6").items() if n in _NEW},
    },
    deprecated={"nki.language": {"dynamic_range": "nl.fori_loop(lower, upper, body_fun)"}},
)
