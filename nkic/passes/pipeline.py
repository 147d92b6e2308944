"""The pass manager: semantic checks, static bounds, then lowering, verified after the last pass
(and before the first and between passes when asked)."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..backend.engines import AssignEngines
from ..ir.core import Alloc, Kernel
from ..ir.printer import print_kernel
from ..ir.target import target
from ..ir.verifier import VerifierError, verify
from .accumulate import ResolveAccumulate
from .allocate import Allocate
from .base import Pass, PassContext, without_gc
from .bounds import CheckBounds
from .checks import CHECK_PASSES
from .views import ApplyViews, CheckHbmOffsets


class InternalCompilerError(Exception):
    """A pass produced IR that breaks the verifier's rules: a compiler bug, not a user error."""


def check_passes() -> list[Pass]:
    """Passes that only report diagnostics, in order."""
    return [*CHECK_PASSES, CheckBounds()]


def lowering_passes() -> list[Pass]:
    """Passes that transform the checked kernel for the backend, in order."""
    return [ApplyViews(), CheckHbmOffsets(), ResolveAccumulate(), Allocate(), AssignEngines()]


PASS_NAMES: tuple[str, ...] = tuple(p.name for p in check_passes() + lowering_passes())


def verify_each(ctx: PassContext) -> bool:
    """Verify the input and the IR after every pass (naming the pass that broke it), not only
    after the last pass: when the context asks or the environment sets NKIC_VERIFY_EACH (the
    test suite does). Off by default: each run walks the whole kernel, and a fully unrolled
    kernel has 100k instructions."""
    return ctx.verify_each or os.environ.get("NKIC_VERIFY_EACH", "") not in ("", "0")


def _dump(kernel: Kernel, name: str, dump: Callable[[str], object]) -> None:
    dump(f"// -----// IR Dump After {name} //----- //\n{print_kernel(kernel)}")


@without_gc
def run_pipeline(
    kernel: Kernel,
    ctx: PassContext,
    dump_after: str | None = None,
    dump: Callable[[str], object] = print,
) -> Kernel:
    """Run checks then lowering on `kernel` in place and return it.

    Lowering is skipped when a check reported an error, and later lowering passes are skipped
    when one reports an error. `dump_after` names a pass (or `all`) after which the printed IR
    is passed to `dump`. Raises InternalCompilerError if the IR is malformed after the last
    pass; with `verify_each`, VerifierError if the input IR is malformed and
    InternalCompilerError naming the first pass that leaves it malformed.
    """
    if dump_after is not None and dump_after != "all" and dump_after not in PASS_NAMES:
        raise ValueError(
            f"unknown pass {dump_after!r} for --dump-ir-after; known: all, " + ", ".join(PASS_NAMES)
        )
    each = verify_each(ctx)
    if each:
        problems = verify(kernel)
        if problems:
            raise VerifierError(problems, "on the pipeline's input")
    ran: list[str] = []
    for checking, stage in ((True, check_passes()), (False, lowering_passes())):
        ctx.check_memo = {} if checking else None
        for p in stage:
            p.run(kernel, ctx)
            ran.append(p.name)
            if each:
                _verify_after(kernel, f"pass {p.name} produced invalid IR")
            if dump_after in ("all", p.name):
                _dump(kernel, p.name, dump)
            if ctx.sink.has_errors and not checking:
                break
        if ctx.sink.has_errors:
            if checking:
                ctx.check_memo = None
                allocation_diagnostics(kernel, ctx)
            break
    ctx.check_memo = None
    if not each:
        passes = f" {ran[0]} .. {ran[-1]}" if ran else ""
        _verify_after(
            kernel,
            "invalid IR after the pass pipeline: its input or one of the passes"
            f"{passes} made it (NKIC_VERIFY_EACH=1 tells which)",
        )
    return kernel


def _verify_after(kernel: Kernel, what: str) -> None:
    """Raise InternalCompilerError, saying `what` went wrong, if the IR is malformed."""
    problems = verify(kernel)
    if problems:
        raise InternalCompilerError(f"{what}:\n  " + "\n  ".join(problems))


def allocation_diagnostics(kernel: Kernel, ctx: PassContext) -> None:
    """Report what allocation finds (capacity, `address=` placements) in a kernel that other
    checks already rejected: those findings do not depend on the rejected statements, and
    every problem should show in one run. For a partially specialised kernel they still hold,
    since the missing statements could only add live tensors. Skipped when a tensor has more
    partitions than the target: that is reported already, and it cannot be placed at all.
    PSUM bank crossings are not checked here (an oversized matmul output is reported already),
    and the kernel is left unallocated."""
    partitions = target(kernel.target).partitions
    tensors = [op.result for op, _ in kernel.walk() if isinstance(op, Alloc)]
    if verify(kernel) or any(t.on_chip and t.num_partitions > partitions for t in tensors):
        return
    placed = [(t, t.address, t.rotate) for t in tensors]
    Allocate(check_psum_banks=False).run(kernel, ctx)
    for t, address, rotate in placed:
        t.address, t.rotate = address, rotate
