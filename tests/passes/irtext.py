"""Writing pass tests as IR text: kernels, locations, tiles, and a pass runner."""

from __future__ import annotations

from nkic.diagnostics import Diagnostic
from nkic.ir.core import Inst, Kernel, Tensor
from nkic.ir.parser import parse_kernel
from nkic.passes.base import Pass, PassContext

FILE = "kernel.py"


def at(line: int) -> str:
    """An IR location on one line of FILE."""
    return f"@0:{line}:5-{line}:40"


def tile(name: str, p: int, f: int, offset: str = "0", row: int | None = None) -> str:
    """A `(p, f)` view of a tensor whose rows (partitions) hold `row` elements (default f)."""
    return f"%{name}[{offset}; [{row or f}, {p}], [1, {f}]]"


def kernel(body: str, params: str = "", returns: str = "", target: str = "trn2") -> Kernel:
    return parse_kernel(
        f'kernel @k target={target} {{\n  file 0 "{FILE}"\n{params}\n{body}\n  return {returns}\n}}\n'
    )


def run(p: Pass, k: Kernel) -> list[Diagnostic]:
    ctx = PassContext(k.target)
    p.run(k, ctx)
    return ctx.sink.items


def tensors(k: Kernel) -> dict[str, Tensor]:
    """Tensors by label."""
    return {t.label: t for t in k.tensors()}


def insts(k: Kernel, opcode: str | None = None) -> list[Inst]:
    return [i for i in k.instructions() if opcode is None or i.opcode == opcode]
