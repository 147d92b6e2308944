"""NKI 0.6.0 (Neuron 2.32): `nl.dynamic_range` deprecated (it still works in NKI; nkic does not
implement it in any version); `ncc.all_gather_v`."""

from __future__ import annotations

from .. import nki_collectives
from .nki_0_5 import NKI_0_5

_NEW = {"all_gather_v"}
NKI_0_6 = NKI_0_5.derive(
    "NKI 0.6",
    "0.6",
    added={
        "nki.collectives": {n: b for n, b in nki_collectives.bindings("0.6").items() if n in _NEW}
    },
)
