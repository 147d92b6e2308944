"""NKI 0.6.0 (Neuron 2.32): `nl.fori_loop` and `nl.while_loop` added; `nl.dynamic_range` (and
`while reg:`) deprecated in their favour."""

from __future__ import annotations

from .. import nki_surface
from .nki_0_5 import NKI_0_5

NKI_0_6 = NKI_0_5.derive(
    "NKI 0.6",
    "0.6",
    added={"nki.language": nki_surface.dynamic_loop_bindings()},
    deprecated={"nki.language": {"dynamic_range": "nl.fori_loop(lower, upper, body_fun)"}},
)
