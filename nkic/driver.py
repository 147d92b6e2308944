"""The compiler driver: file → specialised IR → checked, allocated IR → .neff bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nkirt.run import without_cycle_collection

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
    #: The program of every physical core of the launch (`ir` is core 0's).
    cores: list[Kernel] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.neff is not None and not any(d.severity == "error" for d in self.diagnostics)

    @property
    def report(self) -> dict | None:
        """The resource report (nkic/report.py), or None when the kernel has errors."""
        from .report import build_report

        kernels = self.cores or [self.ir]
        if None in kernels or any(d.severity == "error" for d in self.diagnostics):
            return None
        return build_report(kernels)

    @property
    def ir_text(self) -> str:
        return _per_core(self.cores or [self.ir], print_kernel)

    @property
    def asm(self) -> str:
        from .backend import emit_asm

        return _per_core(self.cores or [self.ir], emit_asm)


def _per_core(kernels: list[Kernel | None], show: Callable[[Kernel], str]) -> str:
    if len(kernels) == 1:
        return show(kernels[0]) if kernels[0] is not None else ""
    return "".join(f"// core {k.core} of {k.cores}\n{show(k)}" for k in kernels if k is not None)


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
    lnc: int = 1,
    grid: tuple[int, ...] = (),
    nki: str | None = None,
) -> CompileResult:
    """Specialise `kernel` in `path` for `args`, run the pass pipeline and write the neff.

    `unroll_all` unrolls every loop, symbolic ones included: the reference semantics that
    symbolic loops must match (tests compile both ways and compare the results).
    `lnc` is the launch's logical-core degree: with 2 the kernel is specialised once per
    physical core and the neff holds both programs. `nki` is the NKI language version ("0.3" …
    "0.7"; default: Beta 1 for a file that imports `neuronxcc.nki`, else the newest).
    `grid` is a Beta 1 SPMD launch grid (`kernel[2, 2]`): its programs run one after another
    on one NeuronCore (docs/language.md)."""
    with without_cycle_collection():
        return _compile_file(
            path, kernel, args, target, dump_after, dump, emit, unroll_all, lnc, grid, nki
        )


def _compile_file(path, kernel, args, target, dump_after, dump, emit, unroll_all, lnc, grid, nki):
    if grid:
        grid_error = _grid_error(path, kernel, tuple(grid), lnc)
        if grid_error is not None:
            return CompileResult(kernel, [grid_error])
        return compile_core(
            path,
            kernel,
            args,
            target,
            dump_after,
            dump,
            emit,
            unroll_all,
            grid=tuple(grid),
            nki=nki,
        )
    if lnc != 1:
        from .lnc import compile_lnc

        return compile_lnc(
            path, kernel, args, target, dump_after, dump, emit, lnc, unroll_all, nki=nki
        )
    return compile_core(path, kernel, args, target, dump_after, dump, emit, unroll_all, nki=nki)


def compile_core(
    path: str,
    kernel: str | None,
    args: dict[str, object] | None,
    target: str,
    dump_after: str | None,
    dump: Callable[[str], None],
    emit: bool,
    unroll_all: bool = False,
    core: tuple[int, int] = (0, 1),
    *,
    grid: tuple[int, ...] = (),
    nki: str | None = None,
    memo=None,
) -> CompileResult:
    """The program of physical core `core[0]` of a launch of degree `core[1]`; `memo` (a
    `LoopMemo`) is shared by the cores of a launch."""
    from .backend import write_neff
    from .frontend import specialise
    from .frontend.entry import file_language
    from .passes.base import PassContext
    from .passes.pipeline import run_pipeline

    sink = DiagnosticSink()
    # partial: the IR of the statements that did specialise still gets the checks whose
    # findings do not depend on the failed statements (all errors in one run, as `check`)
    ir = specialise(
        path,
        kernel,
        dict(args or {}),
        target,
        sink,
        partial=True,
        unroll_all=unroll_all,
        core=core,
        grid=grid,
        language=nki,
        memo=memo,
    )
    language = file_language(path, nki)
    rules = language.rules
    if emit and sink.has_errors:
        _shape_independent_checks(path, kernel, args, target, sink, nki)
    result = CompileResult(ir.name if ir is not None else kernel, sink.items, ir)
    if ir is None:
        return result
    _attach_views(ir, args or {})
    if sink.has_errors:
        # Checking only: the IR of the statements that did specialise still gets the checks
        # whose findings do not depend on the failed statements (all errors in one run).
        _run_local_checks(
            ir,
            PassContext(
                target=target,
                sink=sink,
                affine_dependency=rules.affine_dependency,
                nki=language.version,
            ),
        )
        result.diagnostics = sink.items
        return result
    ctx = PassContext(
        target=target,
        sink=sink,
        affine_dependency=rules.affine_dependency,
        nki=language.version,
    )
    from .passes.checks.cross_core import check_prepares, check_single_core

    check_prepares(ir, sink)
    if core[1] == 1:
        check_single_core(ir, sink)
    ir = run_pipeline(ir, ctx, dump_after=dump_after, dump=dump)
    result.ir = ir
    result.diagnostics = sink.items
    if not sink.has_errors and emit and core[1] == 1:
        result.neff = write_neff(ir)
    return result


def _grid_error(path: str, kernel: str | None, grid: tuple[int, ...], lnc: int):
    """`nkic_lnc_degree` for a grid that is not a tuple of positive sizes, or one combined
    with an LNC launch."""
    from .lnc import kernel_loc

    if all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in grid) and lnc == 1:
        return None
    what = "LNC launches of SPMD grids" if lnc != 1 else f"the grid {list(grid)}"
    return Diagnostic(
        "nkic_lnc_degree",
        f"{what}: not supported (a grid is positive sizes, run on one NeuronCore)",
        kernel_loc(path, kernel),
        "error",
        "give the grid as sizes >= 1 (--grid 2,2), without --lnc",
    )


def _attach_views(ir: Kernel, args: dict[str, object]) -> None:
    """Parameters given as views into larger HBM buffers (lowered by passes/views.py)."""
    for t in ir.params:
        view = getattr(args.get(t.label), "view", None)
        if view is not None:
            t.view = view


def _shape_independent_checks(path, kernel, args, target, sink: DiagnosticSink, nki) -> None:
    """A kernel that could not be specialised because arguments are missing still gets the
    errors `nkic check` finds without shapes, so both commands report the same problems."""
    from .frontend import find_kernels
    from .frontend.lint import lint_kernel

    if not any(d.code == "err_missing_argument" for d in sink.items):
        return
    names = [kernel] if kernel else [name for name, _ in find_kernels(path, language=nki)]
    if len(names) != 1:
        return
    found = DiagnosticSink()
    if lint_kernel(path, names[0], dict(args or {}), target, found, language=nki):
        for d in found.items:
            if d.code != "nkic_shapes_unknown":
                sink.report(d)


def _parses(path: str) -> bool:
    import ast

    try:
        ast.parse(Path(path).read_bytes().decode("utf-8"), filename=path)
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
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
    lnc: int | None = None,
    reports: list[dict] | None = None,
    grid: tuple[int, ...] = (),
    nki: str | None = None,
) -> list[Diagnostic]:
    """Every diagnostic of every kernel in `path` (or of the one named). A kernel whose
    parameters lack shapes gets the shape-independent checks and a `nkic_shapes_unknown` note.
    `lnc` checks one launch degree; None checks LNC=1 and, when the kernel asks for its core
    and the target has LNC=2, LNC=2 too (each diagnostic then names its cores). The resource
    report of every launch checked without errors is appended to `reports` when given. `nki`
    is the language version, as for `compile_file`."""
    from .frontend import find_kernels
    from .frontend.entry import unchecked_kernels
    from .frontend.lint import lint_kernel

    names = [kernel] if kernel else [name for name, _ in find_kernels(path, language=nki)]
    if not names and not _parses(path):
        # a file that does not parse gets its syntax error; a parsable file without kernels
        # (a helper module) is fine
        return compile_file(path, None, args, target, emit=False, nki=nki).diagnostics
    diags: list[Diagnostic] = [] if kernel else unchecked_kernels(path, language=nki)
    for name in names:
        sink = DiagnosticSink()
        unknown_shapes = lint_kernel(path, name, dict(args or {}), target, sink, language=nki)
        if grid:
            res = compile_file(
                path, name, args, target, emit=False, lnc=lnc or 1, grid=grid, nki=nki
            )
            found = res.diagnostics
            if reports is not None and res.report is not None:
                reports.append(res.report)
        elif lnc is None:
            from .lnc import check_launches

            found = check_launches(path, name, args, target, reports, nki=nki)
        else:
            res = compile_file(path, name, args, target, emit=False, lnc=lnc, nki=nki)
            found = res.diagnostics
            if reports is not None and res.report is not None:
                reports.append(res.report)
        for d in found:
            # without shapes, what specialises still gets checked; the missing arguments are
            # the note's business (`nkic compile` reports them as errors)
            if not (unknown_shapes and d.code == "err_missing_argument"):
                sink.report(d)
        diags.extend(sink.items)
    # a helper that several kernels of the file reach reports the same problem once
    file_sink = DiagnosticSink()
    for d in diags:
        file_sink.report(d)
    return file_sink.items
