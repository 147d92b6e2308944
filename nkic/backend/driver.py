"""Compiles a kernel's IR to `.neff` bytes: the pass pipeline, then the backend."""

from __future__ import annotations

from collections.abc import Callable

from ..diagnostics import CompileError
from ..ir.core import Kernel
from ..passes.base import PassContext
from ..passes.pipeline import run_pipeline
from .neff import write_neff


def compile_kernel(
    kernel: Kernel,
    ctx: PassContext,
    dump_after: str | None = None,
    dump: Callable[[str], object] = print,
) -> bytes:
    """Run the pass pipeline on `kernel` (in place), then write it as `.neff` bytes.

    Raises CompileError carrying every diagnostic when the kernel has errors.
    """
    run_pipeline(kernel, ctx, dump_after=dump_after, dump=dump)
    if ctx.sink.has_errors:
        raise CompileError(ctx.sink.items)
    return write_neff(kernel)
