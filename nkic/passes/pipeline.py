"""The pass manager: semantic checks, static bounds, then lowering, verified between passes."""

from __future__ import annotations

from collections.abc import Callable

from ..backend.engines import AssignEngines
from ..ir.core import Kernel
from ..ir.printer import print_kernel
from ..ir.verifier import VerifierError, verify
from .accumulate import ResolveAccumulate
from .allocate import Allocate
from .base import Pass, PassContext
from .bounds import CheckBounds
from .checks import CHECK_PASSES


class InternalCompilerError(Exception):
    """A pass produced IR that breaks the verifier's rules: a compiler bug, not a user error."""


def check_passes() -> list[Pass]:
    """Passes that only report diagnostics, in order."""
    return [*CHECK_PASSES, CheckBounds()]


def lowering_passes() -> list[Pass]:
    """Passes that transform the checked kernel for the backend, in order."""
    return [ResolveAccumulate(), Allocate(), AssignEngines()]


PASS_NAMES: tuple[str, ...] = tuple(p.name for p in check_passes() + lowering_passes())


def _dump(kernel: Kernel, name: str, dump: Callable[[str], object]) -> None:
    dump(f"// -----// IR Dump After {name} //----- //\n{print_kernel(kernel)}")


def run_pipeline(
    kernel: Kernel,
    ctx: PassContext,
    dump_after: str | None = None,
    dump: Callable[[str], object] = print,
) -> Kernel:
    """Run checks then lowering on `kernel` in place and return it.

    Lowering is skipped when a check reported an error, and later lowering passes are skipped
    when one reports an error. `dump_after` names a pass (or `all`) after which the printed IR
    is passed to `dump`. Raises VerifierError if the input IR is malformed and
    InternalCompilerError if a pass leaves it malformed.
    """
    if dump_after is not None and dump_after != "all" and dump_after not in PASS_NAMES:
        raise ValueError(
            f"unknown pass {dump_after!r} for --dump-ir-after; known: all, " + ", ".join(PASS_NAMES)
        )
    problems = verify(kernel)
    if problems:
        raise VerifierError(problems, "on the pipeline's input")
    for checking, stage in ((True, check_passes()), (False, lowering_passes())):
        for p in stage:
            p.run(kernel, ctx)
            problems = verify(kernel)
            if problems:
                raise InternalCompilerError(
                    f"pass {p.name} produced invalid IR:\n  " + "\n  ".join(problems)
                )
            if dump_after in ("all", p.name):
                _dump(kernel, p.name, dump)
            if ctx.sink.has_errors and not checking:
                return kernel
        if ctx.sink.has_errors:
            return kernel
    return kernel
