"""NKI 0.7.0 (Neuron 2.33): `nl.dynamic_range` removed (and with it `while reg:` loops); the
`NkiScalar` API added (`nisa.scalar_load`, `nisa.scalar_store`); the tiled layout (`nl.tiles`,
`nl.blocks`, `nl.alloc_tiles`, `nl.alloc_blocks`, `nl_grids.py`) added; the prepare/trigger split
of the variable-size collectives added; `is` / `is not` compare any values, as kernels are
specialised as ordinary Python; `nl.affine_range`, `nl.sequential_range` and `nl.static_range`
deprecated (plain `range` loops)."""

from __future__ import annotations

import ast

from .. import nki_collectives, nki_surface, nl_grids
from .nki_0_3 import UNSUPPORTED_SYNTAX
from .nki_0_6 import NKI_0_6

#: The prepare/trigger split of the variable-size collectives.
_SPLIT = {
    "all_to_all_v_prepare",
    "all_to_all_v_trigger",
    "all_gather_v_prepare",
    "all_gather_v_trigger",
}

#: Statements outside the 0.3-0.6 subset that a 0.7 kernel runs as Python.
_PYTHON_07 = (ast.Try, ast.Yield, ast.YieldFrom)

_LOOPS = (
    "nl.fori_loop(lower, upper, body_fun) (or range() for a loop whose trip count is known "
    "at compile time)"
)

NKI_0_7 = NKI_0_6.derive(
    "NKI 0.7",
    "0.7",
    added={
        "nki.isa": nki_surface.scalar_bindings(),
        "nki.language": {"int64": "int64", **nl_grids.bindings()},
        "nki.collectives": {
            n: b for n, b in nki_collectives.bindings("0.7").items() if n in _SPLIT
        },
    },
    removed={"nki.language": {"dynamic_range": _LOOPS}},
    # "affine_range, sequential_range, static_range deprecated, now plain Python range" (the
    # 0.7 release notes); nkic compiles them as before (docs/language.md, "NKI versions")
    deprecated={
        "nki.language": {
            name: f"range(start, stop, step): NKI 0.7 runs nl.{name} as a plain range loop"
            for name in ("affine_range", "sequential_range", "static_range")
        }
    },
    # the kernel body is ordinary Python (specialisation by tracing): `is` compares identity,
    # a tensor's truth value is the object's, and the outputs are the tensors of whichever
    # sequence the kernel returns; `try`/`except`/`finally` handle the kernel's own `raise`
    # and failed `assert`s at specialisation time, `with` takes any context manager, and a
    # generator function returns the values it yields
    rules={
        "is_only_against_none": False,
        "tensor_truth": "object",
        "list_returns": True,
        "python_with": True,
        "unsupported_syntax": {k: v for k, v in UNSUPPORTED_SYNTAX.items() if k not in _PYTHON_07},
    },
)
