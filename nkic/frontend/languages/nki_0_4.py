"""NKI 0.4.0 (Neuron 2.30): NKI 0.3.0 with `tensor_copy_dynamic_src/dst` removed and two
`nl.tile_size` fields deprecated (release notes, `nki/migration` guide)."""

from __future__ import annotations

from .. import nki_surface
from .nki_0_3 import NKI_0_3

NKI_0_4 = NKI_0_3.derive(
    "NKI 0.4",
    "0.4",
    added={"nl.tile_size": nki_surface.tile_size_bindings_0_4()},
    removed={
        "nki.isa": {
            "tensor_copy_dynamic_src": "a view with .ap(scalar_offset=...)",
            "tensor_copy_dynamic_dst": "a view with .ap(scalar_offset=...)",
        },
    },
    deprecated={
        "nl.tile_size": {
            "psum_fmax": "nl.tile_size.psum_bank_fmax",
            "total_available_sbuf_size": "nl.tile_size.sbuf_fmax_bytes (bytes per partition) or "
            "nl.tile_size.sbuf_size_bytes (all partitions)",
        }
    },
)
