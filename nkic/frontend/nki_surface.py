"""What nkic implements of the `nki`, `nki.language`, `nki.isa` and `nki.typing` modules: one
ordered table of name → binding per module, from which each language version builds the
module values its kernels see (`language.py`)."""

from __future__ import annotations

from ..ir.isa import ACTIVATIONS, ALU_OPS, COLLECTIVES, ENUMS, INSTRUCTIONS, REGISTER_OPS
from ..ir.types import DTYPES
from . import nki_api as api
from . import nl_data, nl_math, registers  # noqa: F401  (their lowerings register on import)
from .language import ModuleRef
from .nl_lowering import LOWERINGS
from .tensors import TensorView
from .values import (
    Builtin,
    ContextManagerValue,
    IsaEnum,
    IsaEnumMember,
    IsaInstr,
    NkiObjectBase,
    NlOp,
    PerTarget,
    PyType,
    TypingMarker,
)


def _program_id(ip, call, axis=0):
    """The physical core of the LNC launch this program is specialised for."""
    ip.kernel.reads_core = True
    return ip.kernel.core


def _num_programs(ip, call, axes=0):
    ip.kernel.reads_core = True
    return ip.kernel.cores


def _program_ndim(ip, call):
    """The launch grid's rank: a kernel launched on an LNC of degree 2 (`kernel[2]`, `--lnc 2`)
    has the one-axis grid [2]; one launched on one core is taken as the unbracketed launch,
    which has no grid (the LNC overview: `kernel(...)` is one core, `kernel[2](...)` two)."""
    ip.kernel.reads_core = True
    return 1 if ip.kernel.cores > 1 else 0


def nl_bindings() -> dict[str, object]:
    """`nki.language`: dtypes, buffers, `tile_size`, operators, builtins and lowerings."""
    attrs: dict[str, object] = {}
    for name in DTYPES:
        attrs[name] = name
    attrs["bool_"] = "bool"
    del attrs["bool"]
    attrs.update(
        sbuf=api.SBUF, psum=api.PSUM, hbm=api.HBM, private_hbm=api.HBM, shared_hbm=api.SHARED_HBM
    )
    attrs["tile_size"] = ModuleRef("nl.tile_size")
    for op in (*ALU_OPS, *ACTIVATIONS):
        attrs[op] = NlOp(op)
    builtins = {
        "ndarray": api.ndarray,
        "empty_like": api.empty_like,
        "ds": api.ds,
        "affine_range": api.loop_iterator("affine"),
        "sequential_range": api.loop_iterator("sequential"),
        "static_range": api.loop_iterator("static"),
        # not in the API reference; the NKI Library iterates with it: Python's range
        "range": api.loop_iterator("range"),
        "program_id": _program_id,
        "num_programs": _num_programs,
        "program_ndim": _program_ndim,
        "no_reorder": lambda ip, call: ContextManagerValue("no_reorder"),
        "is_hbm": api.buffer_predicate(("hbm", "shared_hbm")),
        "is_on_chip": api.buffer_predicate(("sbuf", "psum")),
        "is_psum": api.buffer_predicate(("psum",)),
        "is_sbuf": api.buffer_predicate(("sbuf",)),
    }
    needs_kernel = {"ndarray", "empty_like"}
    for name, fn in builtins.items():
        attrs[name] = Builtin(f"nl.{name}", fn, nki_api=name in needs_kernel)
    for name, fn in LOWERINGS.items():
        if name not in attrs:
            attrs[name] = Builtin(f"nl.{name}", fn, nki_api=True)
    attrs["NKIObject"] = NkiObjectBase()
    attrs["NkiTensor"] = PyType("NkiTensor", (TensorView,))
    return attrs


def nisa_bindings() -> dict[str, object]:
    """`nki.isa`: every instruction of the catalogue, its enums and engine constants."""
    attrs: dict[str, object] = {
        name: IsaInstr(name)
        for name in INSTRUCTIONS
        if name not in COLLECTIVES and name not in REGISTER_OPS
    }
    for enum, members in ENUMS.items():
        attrs[enum] = IsaEnum(enum, tuple(members.items()))
    for alias in ("tensor", "vector", "scalar", "gpsimd", "unknown"):
        attrs[f"{alias}_engine"] = IsaEnumMember("engine", alias, ENUMS["engine"][alias])
    attrs["get_nc_version"] = Builtin("nisa.get_nc_version", api.get_nc_version)
    return attrs


def register_bindings() -> dict[str, object]:
    """`nki.isa` registers (NKI 0.3+): `register_alloc/move/load/store`, `VirtualRegister`."""
    out: dict[str, object] = {
        name: Builtin(f"nisa.{name}", getattr(registers, name), nki_api=True)
        for name in ("register_alloc", "register_move", "register_load", "register_store")
    }
    out["VirtualRegister"] = PyType("VirtualRegister", (registers.Register,))
    return out


def dynamic_range_binding() -> dict[str, object]:
    """`nl.dynamic_range` (NKI 0.3-0.6)."""
    return {"dynamic_range": Builtin("nl.dynamic_range", registers.dynamic_range, nki_api=True)}


def dynamic_loop_bindings() -> dict[str, object]:
    """`nl.fori_loop` and `nl.while_loop` (NKI 0.6+)."""
    return {
        name: Builtin(f"nl.{name}", getattr(registers, name), nki_api=True)
        for name in ("fori_loop", "while_loop")
    }


def scalar_bindings() -> dict[str, object]:
    """`nki.isa` NkiScalar (NKI 0.7): `scalar_load`, `scalar_store` and the type."""
    return {
        "scalar_load": Builtin("nisa.scalar_load", registers.scalar_load, nki_api=True),
        "scalar_store": Builtin("nisa.scalar_store", registers.scalar_store, nki_api=True),
        "NkiScalar": PyType("NkiScalar", (registers.Register,)),
    }


def tile_size_bindings() -> dict[str, object]:
    """`nl.tile_size` of NKI 0.3: the documented hardware tile sizes, and
    `total_available_sbuf_size`, the usable SBUF bytes per partition of the target."""
    return {**api.TILE_SIZE, "total_available_sbuf_size": PerTarget(sbuf_partition_bytes)}


def tile_size_bindings_0_4() -> dict[str, object]:
    """What NKI 0.4 adds to `nl.tile_size`
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.language.tile_size.html):
    `sbuf_fmax_bytes`, the usable bytes per partition (what `total_available_sbuf_size` always
    was), `sbuf_fmax` the same in fp32 elements, `sbuf_size_bytes` all partitions together."""
    return {
        "sbuf_fmax_bytes": PerTarget(sbuf_partition_bytes),
        "sbuf_fmax": PerTarget(lambda t: sbuf_partition_bytes(t) // 4),
        "sbuf_size_bytes": PerTarget(lambda t: sbuf_partition_bytes(t) * api.TILE_SIZE["pmax"]),
    }


def sbuf_partition_bytes(target: str) -> int:
    from ..ir.target import TARGETS

    return TARGETS[target].sbuf_partition_bytes


def isa_constants_bindings() -> dict[str, object]:
    """`nki.isa.constants`: the instruction enums (also reachable as `nisa.<enum>`)."""
    return {enum: IsaEnum(enum, tuple(members.items())) for enum, members in ENUMS.items()}


def typing_bindings() -> dict[str, object]:
    """`nki.typing`: the tensor annotations."""
    return {
        "tensor": TypingMarker("nt.tensor"),
        "mutable_tensor": TypingMarker("nt.mutable_tensor"),
    }


def nki_bindings() -> dict[str, object]:
    """`nki` itself (its submodules are added by the language)."""
    return {"jit": Builtin("nki.jit", api.jit)}


def lowerings() -> dict[str, object]:
    """The `nl.<name>(...)` lowerings to `nki.isa` instructions, by name."""
    return dict(LOWERINGS)
