"""NKI 0.6.0 (Neuron 2.32): `nisa.topk` added; `ncc.all_gather_v` named as not implemented; `nl.dynamic_range` deprecated (it still works in
NKI; nkic does not implement it in any version)."""

from __future__ import annotations

from .. import nki_surface
from .nki_0_5 import NKI_0_5

NKI_0_6 = NKI_0_5.derive(
    "NKI 0.6",
    "0.6",
    added={"nki.isa": {"topk": nki_surface.nisa_bindings()["topk"]}},
    unsupported={"nki.collectives": {"all_gather_v": "ncc.all_gather with equal-sized parts"}},
)
