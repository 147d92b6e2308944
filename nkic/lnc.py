"""Compiling and checking a kernel for an LNC launch: one program per physical core.

`nl.program_id()` and `nl.num_programs()` are specialisation-time values, so a launch of
degree 2 is two specialisations of the kernel (core 0 and core 1), each checked and
allocated on its own, plus the checks across them (`passes/checks/cross_core.py`). The neff
holds both programs; the runtime runs them on two simulated cores that share HBM.
"""

from __future__ import annotations

from collections.abc import Callable

from .diagnostics import Diagnostic, DiagnosticSink
from .driver import CompileResult, compile_core
from .ir.core import Loc
from .ir.target import target as target_info


def degree_error(path: str, kernel: str | None, target: str, lnc: int) -> Diagnostic | None:
    """`nkic_lnc_degree` when `target` cannot launch `lnc` cores."""
    degrees = target_info(target).lnc_degrees
    if lnc in degrees:
        return None
    return Diagnostic(
        "nkic_lnc_degree",
        f"LNC={lnc} is not available on {target} (logical-core degrees there: "
        f"{', '.join(map(str, degrees))})",
        kernel_loc(path, kernel),
        "error",
        "LNC=2 exists on trn2 and trn3 only; launch with kernel[1] / --lnc 1, or pick such "
        "a target",
    )


def kernel_loc(path: str, kernel: str | None) -> Loc:
    """Where kernel `kernel` (or the file's first kernel) is defined."""
    from .frontend import find_kernels

    found = find_kernels(path)
    for name, loc in found:
        if kernel is None or name == kernel:
            return loc
    return Loc(path, 1, 1, 1, 1)


def _launch(
    path: str,
    kernel: str | None,
    args: dict[str, object] | None,
    target: str,
    dump_after: str | None,
    dump: Callable[[str], None],
    emit: bool,
    lnc: int,
    unroll_all: bool,
    nki: str | None = None,
) -> tuple[list[CompileResult], list[Diagnostic]]:
    """Each core's compilation, and the diagnostics of the checks across cores."""
    from .frontend.interp.state import LoopMemo
    from .passes.checks.cross_core import check_cores

    memo = LoopMemo()  # a loop that must be unrolled on one core is not attempted on the next
    results = [
        compile_core(
            path,
            kernel,
            args,
            target,
            dump_after,
            dump,
            emit,
            unroll_all,
            (c, lnc),
            nki=nki,
            memo=memo,
        )
        for c in range(lnc)
    ]
    kernels = [r.ir for r in results]
    sink = DiagnosticSink()
    clean = not any(d.severity == "error" for r in results for d in r.diagnostics)
    if clean and None not in kernels:
        check_cores(kernels, sink)
    return results, sink.items


def compile_lnc(
    path: str,
    kernel: str | None,
    args: dict[str, object] | None,
    target: str,
    dump_after: str | None,
    dump: Callable[[str], None],
    emit: bool,
    lnc: int,
    unroll_all: bool = False,
    nki: str | None = None,
) -> CompileResult:
    """Every core's program of an LNC=`lnc` launch, the cross-core checks, and one neff."""
    from .backend import write_neff

    error = degree_error(path, kernel, target, lnc)
    if error is not None:
        return CompileResult(kernel, [error])
    results, cross = _launch(
        path, kernel, args, target, dump_after, dump, emit, lnc, unroll_all, nki
    )
    kernels = [r.ir for r in results]
    labelled = [(f"LNC={lnc} core {c}", r.diagnostics) for c, r in enumerate(results)]
    diags = merge(labelled, always=True) + cross
    result = CompileResult(results[0].kernel_name, diags, kernels[0], cores=kernels)
    if emit and not any(d.severity == "error" for d in diags) and None not in kernels:
        result.neff = write_neff(kernels[0], kernels[1:])
    return result


def merge(labelled: list[tuple[str, list[Diagnostic]]], always: bool = False) -> list[Diagnostic]:
    """One list of several programs' diagnostics, each report once. A report not every
    program makes names the programs that make it ("[LNC=2 core 1]"); with `always`, every
    report names them. Programs that report the same code at the same place in different words
    (an assertion printing the program count) make one diagnostic: the first wording, the
    others as notes naming their programs."""
    groups: list[tuple[Diagnostic, dict[str, list[str]]]] = []  # (first, message -> labels)
    exact: dict[tuple, int] = {}
    by_site: dict[tuple, list[int]] = {}
    for label, diags in labelled:
        for d in diags:
            site = (d.code, d.loc.file, d.loc.line, d.loc.col)
            n = exact.get(site + (d.message,))
            if n is None:
                # the same site, reported by earlier programs only: another wording of it
                n = next(
                    (
                        i
                        for i in by_site.get(site, ())
                        if all(label not in ls for ls in groups[i][1].values())
                    ),
                    None,
                )
                if n is None:
                    n = len(groups)
                    groups.append((d, {}))
                    by_site.setdefault(site, []).append(n)
                exact[site + (d.message,)] = n
            labels = groups[n][1].setdefault(d.message, [])
            if label not in labels:
                labels.append(label)
    out = []
    for d, wordings in groups:
        labels = wordings[d.message]
        others = tuple(
            f"[{', '.join(ls)}] {message}"
            for message, ls in wordings.items()
            if message != d.message
        )
        if always or others or len(labels) < len(labelled):
            d = Diagnostic(
                d.code,
                f"{d.message} [{', '.join(labels)}]",
                d.loc,
                d.severity,
                d.hint,
                d.related,
                d.notes + others,
            )
        out.append(d)
    return out


def check_launches(
    path: str,
    kernel: str,
    args: dict[str, object] | None,
    target: str,
    reports: list[dict] | None = None,
    nki: str | None = None,
) -> list[Diagnostic]:
    """`nkic check` of one kernel: LNC=1 and, when the kernel asks for its core and the
    target has LNC=2, both cores of LNC=2 as well; a diagnostic not made by every program
    names the programs that make it."""
    from .driver import compile_file
    from .report import build_report

    single = compile_file(path, kernel, args, target, emit=False, nki=nki)
    if reports is not None and single.report is not None:
        reports.append(single.report)
    from .passes.checks.cross_core import meetings

    ir = single.ir
    two_only = ir is not None and bool(meetings(ir))  # it meets the other core: LNC=2 only
    if ir is None or not (ir.reads_core or two_only) or 2 not in target_info(target).lnc_degrees:
        return single.diagnostics
    results, cross = _launch(path, kernel, args, target, None, print, False, 2, False, nki)
    labelled = [] if two_only else [("LNC=1", single.diagnostics)]
    labelled += [(f"LNC=2 core {c}", r.diagnostics) for c, r in enumerate(results)]
    clean = not any(d.severity == "error" for r in results for d in r.diagnostics + cross)
    if reports is not None and clean and all(r.ir is not None for r in results):
        reports.append(build_report([r.ir for r in results]))
    return merge(labelled) + cross
