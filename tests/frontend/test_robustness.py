"""The frontend never raises on bad input: every kernel file, with missing, wrongly typed or
oddly shaped arguments, gives an IR or diagnostics (never a Python exception)."""

from __future__ import annotations

import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import find_kernels, specialise

from .util import KERNELS, spec

FILES = sorted(str(p) for p in KERNELS.rglob("*.py"))
ARG_SETS = [
    {},
    {"x": 5, "a": "s", "h": None},
    {"x": spec((3,)), "a": spec((3, 7)), "b": spec((1, 1)), "h": spec((2, 2))},
    {"x": spec((512, 4096), "bfloat16"), "h": spec((4, 128, 32), "int8")},
    {"x": (1, 2), "mode": object(), "n": -1},
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.split("kernels/")[1])
def test_no_exception_escapes(path):
    for name, _ in find_kernels(path) or [(None, None)]:
        for args in ARG_SETS:
            sink = DiagnosticSink()
            k = specialise(path, name, dict(args), "trn1", sink)
            assert k is not None or sink.has_errors
            assert not [d for d in sink.items if d.code == "nkic_internal_error"], [
                d.message for d in sink.items if d.code == "nkic_internal_error"
            ]
