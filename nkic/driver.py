"""The compiler driver: file → specialised IR → checked, allocated IR → .neff bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import Diagnostic, DiagnosticSink
from .ir.core import Kernel
from .ir.printer import print_kernel

DEFAULT_TARGET = "trn2"


@dataclass
class CompileResult:
    """Everything one compilation produced; `neff` is None when the kernel has errors."""

    kernel_name: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ir: Kernel | None = None
    neff: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.neff is not None and not any(d.severity == "error" for d in self.diagnostics)

    @property
    def ir_text(self) -> str:
        return print_kernel(self.ir) if self.ir is not None else ""

    @property
    def asm(self) -> str:
        from .backend import emit_asm

        return emit_asm(self.ir) if self.ir is not None else ""


def compile_file(
    path: str,
    kernel: str | None = None,
    args: dict[str, object] | None = None,
    target: str = DEFAULT_TARGET,
    dump_after: str | None = None,
    dump: Callable[[str], None] = print,
    emit: bool = True,
    *,
    unroll_all: bool = False,
) -> CompileResult:
    """Specialise `kernel` in `path` for `args`, run the pass pipeline and write the neff.

    `unroll_all` unrolls every loop, symbolic ones included: the reference semantics that
    symbolic loops must match (tests compile both ways and compare the results)."""
    from .backend import write_neff
    from .frontend import specialise
    from .passes.base import PassContext
    from .passes.pipeline import run_pipeline

    sink = DiagnosticSink()
    # partial: the IR of the statements that did specialise still gets the checks whose
    # findings do not depend on the failed statements (all errors in one run, as `check`)
    ir = specialise(
        path, kernel, dict(args or {}), target, sink, partial=True, unroll_all=unroll_all
    )
    if emit and sink.has_errors:
        _shape_independent_checks(path, kernel, args, target, sink)
    result = CompileResult(ir.name if ir is not None else kernel, sink.items, ir)
    if ir is None:
        return result
    if sink.has_errors:
        # Checking only: the IR of the statements that did specialise still gets the checks
        # whose findings do not depend on the failed statements (all errors in one run).
        _run_local_checks(ir, PassContext(target=target, sink=sink))
        result.diagnostics = sink.items
        return result
    ctx = PassContext(target=target, sink=sink)
    ir = run_pipeline(ir, ctx, dump_after=dump_after, dump=dump)
    result.ir = ir
    result.diagnostics = sink.items
    if not sink.has_errors and emit:
        result.neff = write_neff(ir)
    return result


def _shape_independent_checks(path, kernel, args, target, sink: DiagnosticSink) -> None:
    """A kernel that could not be specialised because arguments are missing still gets the
    errors `nkic check` finds without shapes, so both commands report the same problems."""
    from .frontend import find_kernels
    from .frontend.lint import lint_kernel

    if not any(d.code == "err_missing_argument" for d in sink.items):
        return
    names = [kernel] if kernel else [name for name, _ in find_kernels(path)]
    if len(names) != 1:
        return
    found = DiagnosticSink()
    if lint_kernel(path, names[0], dict(args or {}), target, found):
        for d in found.items:
            if d.code != "nkic_shapes_unknown":
                sink.report(d)


def _parses(path: str) -> bool:
    import ast

    try:
        ast.parse(Path(path).read_bytes(), filename=path)
    except (SyntaxError, ValueError, OSError):
        return False
    return True


def _run_local_checks(ir: Kernel, ctx) -> None:
    from .ir.verifier import verify
    from .passes.pipeline import allocation_diagnostics, check_passes

    if verify(ir):
        return
    for p in check_passes():
        if p.local:
            p.run(ir, ctx)
    allocation_diagnostics(ir, ctx)


def check_file(
    path: str,
    kernel: str | None = None,
    args: dict[str, object] | None = None,
    target: str = DEFAULT_TARGET,
) -> list[Diagnostic]:
    """Every diagnostic of every kernel in `path` (or of the one named). A kernel whose
    parameters lack shapes gets the shape-independent checks and a `nkic_shapes_unknown` note."""
    from .frontend import find_kernels
    from .frontend.lint import lint_kernel

    names = [kernel] if kernel else [name for name, _ in find_kernels(path)]
    if not names and not _parses(path):
        # a file that does not parse gets its syntax error; a parsable file without kernels
        # (a helper module) is fine
        return compile_file(path, None, args, target, emit=False).diagnostics
    diags: list[Diagnostic] = []
    for name in names:
        sink = DiagnosticSink()
        unknown_shapes = lint_kernel(path, name, dict(args or {}), target, sink)
        res = compile_file(path, name, args, target, emit=False)
        for d in res.diagnostics:
            # without shapes, what specialises still gets checked; the missing arguments are
            # the note's business (`nkic compile` reports them as errors)
            if not (unknown_shapes and d.code == "err_missing_argument"):
                sink.report(d)
        diags.extend(sink.items)
    return diags
