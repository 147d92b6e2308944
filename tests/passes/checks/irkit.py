"""Writing check tests as IR text: tile access patterns, locations and a runner for CHECK_PASSES."""

from __future__ import annotations

import json

from nkic.diagnostics import Diagnostic
from nkic.ir.parser import parse_kernel
from nkic.passes.base import PassContext
from nkic.passes.checks import CHECK_PASSES

FILE = "kernel.py"


def at(line: int, col: int = 5, end: int = 40) -> str:
    """An IR location on one line of FILE."""
    return f"@0:{line}:{col}-{line}:{end}"


def tile(name: str, p: int, f: int, offset: str = "0", dtype: str | None = None) -> str:
    """A whole `(p, f)` 2-D tile (row length f) starting at `offset`."""
    suffix = f" : {dtype}" if dtype else ""
    return f"%{name}[{offset}; [{f}, {p}], [1, {f}]]{suffix}"


def view(name: str, row: int, p: int, f: int, offset: str = "0") -> str:
    """A `(p, f)` window of a tensor whose rows hold `row` elements."""
    return f"%{name}[{offset}; [{row}, {p}], [1, {f}]]"


def kernel_text(
    body: str, params: str = "", returns: str = "", target: str = "trn2", file: str = FILE
) -> str:
    return (
        f"kernel @k target={target} {{\n"
        f"  file 0 {json.dumps(file)}\n"
        f"{params}\n{body}\n"
        f"  return {returns}\n}}\n"
    )


def check(
    body: str, params: str = "", returns: str = "", target: str = "trn2", file: str = FILE
) -> list[Diagnostic]:
    """Parse the IR kernel (locations in `file`) and run every check pass on it."""
    k = parse_kernel(kernel_text(body, params, returns, target, file))
    ctx = PassContext(target)
    for p in CHECK_PASSES:
        p.run(k, ctx)
    return ctx.sink.items


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def only(diags: list[Diagnostic], code: str) -> Diagnostic:
    """The single diagnostic with `code` (and no diagnostic of any other code)."""
    assert codes(diags) == [code], [f"{d.code}: {d.message}" for d in diags]
    return diags[0]


def errors(diags: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]
