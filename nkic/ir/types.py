"""Element types and memory buffers of the tile IR (the `nki.language` names)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """An NKI element type: its `nl` name, its size in bytes and its numeric class."""

    name: str
    itemsize: int
    kind: str  # "float", "int", "uint", "bool" or "packed"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def __str__(self) -> str:
        return self.name


_DTYPES = [
    DType("bool", 1, "bool"),
    DType("int8", 1, "int"),
    DType("int16", 2, "int"),
    DType("int32", 4, "int"),
    DType("uint8", 1, "uint"),
    DType("uint16", 2, "uint"),
    DType("uint32", 4, "uint"),
    DType("int64", 8, "int"),  # NKI 0.7 `nl.int64`: scalars only (scalar_load/store, DMA)
    DType("float16", 2, "float"),
    DType("bfloat16", 2, "float"),
    DType("tfloat32", 4, "float"),
    DType("float32", 4, "float"),
    DType("float8_e4m3", 1, "float"),
    DType("float8_e4m3fn", 1, "float"),
    DType("float8_e5m2", 1, "float"),
    DType("float8_e8m0fnu", 1, "float"),
    DType("float8_e5m2_x4", 4, "packed"),
    DType("float8_e4m3fn_x4", 4, "packed"),
    DType("float4_e2m1fn_x4", 2, "packed"),
]

DTYPES: dict[str, DType] = {d.name: d for d in _DTYPES}

#: Buffers a tensor can live in. `hbm` is `nl.hbm` / `nl.private_hbm`; `reg` holds the
#: 32-bit registers of the engine sequencers (`nisa.register_alloc`, loop bounds, NkiScalar).
BUFFERS = ("sbuf", "psum", "hbm", "shared_hbm", "reg")
ON_CHIP = ("sbuf", "psum")


def dtype(name: str) -> DType:
    return DTYPES[name]


def is_on_chip(buffer: str) -> bool:
    return buffer in ON_CHIP
