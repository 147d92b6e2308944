"""NKI 0.5.0 (Neuron 2.31): `nl.float8_e8m0fnu` added; `nl.rsqrt` runs on the GpSimd engine and
rejects PSUM input (the release notes' breaking change); `quantize_mx` scales are twice the OCP
sample algorithm's (its numeric change); the new `NkiTensor` view methods are
accepted in every version."""

from __future__ import annotations

from .. import nl_math
from .nki_0_4 import NKI_0_4

NKI_0_5 = NKI_0_4.derive(
    "NKI 0.5",
    "0.5",
    added={"nki.language": {"float8_e8m0fnu": "float8_e8m0fnu"}},
    lowerings={"rsqrt": nl_math.rsqrt_on_gpsimd},
    rules={"mx_scale": "doubled"},
)
