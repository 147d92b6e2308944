"""Backend tests on IR text: compile through the pipeline and look at queues and waits."""

from __future__ import annotations

from nkic.ir.core import Kernel
from nkic.ir.parser import parse_kernel
from nkic.ir.verifier import verify
from nkic.passes.base import PassContext
from nkic.passes.pipeline import lowering_passes


def at(line: int) -> str:
    return f"@0:{line}:5-{line}:40"


def kernel(body: str, params: str = "", returns: str = "", target: str = "trn2") -> Kernel:
    return parse_kernel(
        f'kernel @k target={target} {{\n  file 0 "kernel.py"\n{params}\n{body}\n  return {returns}\n}}\n'
    )


def lowered(body: str, params: str = "", returns: str = "", target: str = "trn2") -> Kernel:
    """The kernel after the lowering passes (independent of the semantic checks)."""
    k = kernel(body, params, returns, target)
    ctx = PassContext(target)
    for p in lowering_passes():
        p.run(k, ctx)
        assert verify(k) == []
    assert ctx.sink.items == [], ctx.sink.items
    return k
