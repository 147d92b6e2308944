"""NKI 0.3.0 (`nki.*` modules, Neuron 2.27/2.28): the API nkic implements, the names NKI 0.3.0
removed or nkic does not implement, and the 0.3.0 kernel-subset rules."""

from __future__ import annotations

import ast

from .. import nki_collectives, nki_surface
from ..language import ApiEntry, Language, Rules

#: APIs that exist in NKI but that nkic does not implement (yet), with what to use instead.
UNSUPPORTED = {
    "nki.language": {
        "fmod": "nl.subtract(x, nl.multiply(y, nl.trunc(nl.divide(x, y)))) (NKI's nl.fmod "
        "runs only in its simulator)",
        "mod": "nl.subtract(x, nl.multiply(y, nl.floor(nl.divide(x, y)))) (NKI's nl.mod "
        "runs only in its simulator)",
    },
    "nki.isa": {
        "NkiInstruction": None,
        "tensor_copy_dynamic_src": ".ap(scalar_offset=...) views (removed in NKI 0.4)",
        "tensor_copy_dynamic_dst": ".ap(scalar_offset=...) views (removed in NKI 0.4)",
    },
    "nki": {"simulate": None, "baremetal": None, "benchmark": None},
}

#: Names of the shared tables that later versions add (`languages/nki_0_X.py`).
LATER = {"nki.isa": ("topk",), "nki.language": ("float8_e8m0fnu",)}

#: Beta 1 names that NKI 0.2.0 removed, with their replacement.
REMOVED = {
    "nki.language": {
        "arange": "slicing or nl.ds(start, size)",
        "mgrid": "slicing or nl.ds(start, size)",
        "par_dim": "the first dimension, which is always the partition dimension",
        "spmd_dim": None,
        "nc": None,
        "static_cast": None,
        "fp32": "nl.float32",
    },
}

#: Keywords of `nki.isa` calls that earlier versions had, with what replaces them.
REMOVED_KEYWORDS = {
    "mask": "mask= was removed in NKI 0.2.0; slice the operands instead",
    "dtype": "dtype= was removed from nki.isa calls in NKI 0.2.0; the dst tile's dtype is used",
    "dst_rmw_op": "dst_rmw_op= was removed; use nisa.dma_compute",
}

#: Python constructs outside the 0.3.0 kernel subset, with the hint for each.
UNSUPPORTED_SYNTAX = {
    ast.Try: "errors cannot be caught at specialisation time; check conditions with if/assert",
    ast.Global: "pass values as function arguments instead",
    ast.Nonlocal: "return the new value from the inner function instead",
    ast.Yield: "build and return a list instead of a generator",
    ast.YieldFrom: "build and return a list instead of a generator",
    ast.AsyncFunctionDef: "NKI kernels are synchronous",
    ast.AsyncFor: "NKI kernels are synchronous",
    ast.AsyncWith: "NKI kernels are synchronous",
    ast.Await: "NKI kernels are synchronous",
    ast.Set: "use a list or a dict with string keys",
    ast.SetComp: "use a list comprehension",
    ast.Match: "use if/elif/else",
}


def _table() -> dict[str, dict[str, ApiEntry]]:
    bound = {
        "nki": nki_surface.nki_bindings(),
        "nki.language": {**nki_surface.nl_bindings(), **nki_surface.dynamic_range_binding()},
        "nki.isa": {**nki_surface.nisa_bindings(), **nki_surface.register_bindings()},
        "nki.typing": nki_surface.typing_bindings(),
        "nki.isa.constants": nki_surface.isa_constants_bindings(),
        "nl.tile_size": nki_surface.tile_size_bindings(),
        "nki.collectives": nki_collectives.bindings(),
    }
    table = {m: {n: ApiEntry(b) for n, b in attrs.items()} for m, attrs in bound.items()}
    for module, names in REMOVED.items():
        for name, alt in names.items():
            table[module][name] = ApiEntry(removed_in="0.2.0", replacement=alt)
    del table["nki.language"]["int64"]  # NKI 0.7 added it
    for module, names in UNSUPPORTED.items():
        for name, alt in names.items():
            table[module][name] = ApiEntry(unsupported=True, replacement=alt)
    for module, names in LATER.items():
        for name in names:
            del table[module][name]
    # `from torch_neuronx import nki_jit`: torch-neuronx's kernel decorator, `nki.jit` itself
    table["torch_neuronx"] = {"nki_jit": table["nki"]["jit"]}
    return table


NKI_0_3 = Language(
    "NKI 0.3",
    "0.3",
    _table(),
    removed_keywords=REMOVED_KEYWORDS,
    lowerings=nki_surface.lowerings(),
    rules=Rules(unsupported_syntax=UNSUPPORTED_SYNTAX),
)
