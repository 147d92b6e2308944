"""NKI 0.5.0 (Neuron 2.31): no change to the names nkic implements or rejects (the new
`NkiTensor` view methods are accepted in every version)."""

from __future__ import annotations

from .nki_0_4 import NKI_0_4

NKI_0_5 = NKI_0_4.derive("NKI 0.5", "0.5")
