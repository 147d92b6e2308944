"""NKI 0.7 (nkic's default) deprecates `nl.affine_range`, `nl.sequential_range` and
`nl.static_range`; the kernels of the tests about other diagnostics loop with them, and drop
that warning (tests/frontend/test_versions.py tests it)."""

from __future__ import annotations

LOOP_RANGES = tuple(
    f"nl.{n} is deprecated since NKI 0.7"
    for n in ("affine_range", "sequential_range", "static_range")
)


def is_loop_deprecation(d) -> bool:
    """`d`: a Diagnostic, or an item of `nkic check --format json`."""
    code, message = (d["code"], d["message"]) if isinstance(d, dict) else (d.code, d.message)
    return code == "nkic_deprecated_api" and message in LOOP_RANGES


def without_loop_deprecations(diags: list) -> list:
    return [d for d in diags if not is_loop_deprecation(d)]
