"""The `nkic` command line: compile, run, check, explain, profile."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

import click
import numpy as np

from . import __version__, driver
from .config import Config, ConfigError, config_for
from .diagnostics import render_text, with_display_paths
from .frontend.languages import DEFAULT as _NKI_DEFAULT
from .frontend.languages import VERSIONS as NKI_VERSIONS
from .ir.target import TARGET_NAMES
from .passes.base import collect_cycles
from .progress import Progress, use_color

NKI_DEFAULT = _NKI_DEFAULT.version

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(click.ClickException):
    """A bad command line or unreadable input: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"error: {_printable(self.format_message())}", err=True)


def _printable(text: str) -> str:
    """Messages may quote names from untrusted files: never let them drive the terminal."""
    from nkirt.errors import printable

    return "\n".join(printable(line) for line in text.split("\n"))


def _parse_args(items: tuple[str, ...]) -> dict[str, object]:
    from .frontend import parse_arg_spec

    out: dict[str, object] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--arg expects NAME=SPEC (e.g. a=bfloat16[128,512]), got {item!r}")
        try:
            out[name] = parse_arg_spec(spec)
        except ValueError as e:
            raise UsageError(f"--arg {name}: {e}") from None
    return out


def _config(path: str) -> Config:
    try:
        return config_for(path)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _kernel_args(config: Config, file: str, kernel: str, given: dict) -> dict[str, object]:
    """The arguments of `kernel`: the `[tool.nkic.args]` defaults, then the command line's."""
    from .frontend import parse_arg_spec

    out: dict[str, object] = {}
    for name, spec in config.kernel_args(file, kernel).items():
        try:
            out[name] = parse_arg_spec(spec)
        except ValueError as e:
            raise UsageError(f"{config.path}: [tool.nkic.args] {kernel}.{name}: {e}") from None
    out.update(given)
    return out


def _nki(option: str | None, config: Config) -> str | None:
    return option or config.nki


NKI_HELP = (
    f"NKI language version of the kernels (default: [tool.nkic] nki, else {NKI_DEFAULT}; "
    "a file importing only neuronxcc.nki is Beta 1)."
)


def _target(option: str | None, config: Config) -> str:
    return option or config.target or driver.DEFAULT_TARGET


TARGET_HELP = f"Target chip (default: [tool.nkic] target, else {driver.DEFAULT_TARGET})."


def _check_writable(path: str) -> None:
    """A usage error, before any work, when `path` cannot be written: its directory is missing
    or not writable, or it is a directory."""
    target = Path(path)
    parent = target.parent
    if target.is_dir():
        raise UsageError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {path}: directory {parent} is not writable")


def _check_source(path: str) -> None:
    if not Path(path).is_file():
        raise UsageError(f"no such kernel file: {path}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nkic")
def cli() -> None:
    """nkic: compile NKI kernels ahead of time and run them on a simulated NeuronCore."""


def main() -> None:
    """Console entry point: user errors are one line; an internal error is one line too.

    A command is one short process, so Python's cyclic garbage collector stays off for it:
    compiling and running allocate millions of objects that reference counting frees, and the
    collector's passes over the million long-lived IR and program objects find nothing to free
    (16 % of compiling the largest NKI Library kernels). At exit the objects are frozen, so
    the interpreter's final collection does not walk them either."""
    gc.disable()
    try:
        cli(prog_name="nkic")
    except Exception as e:
        if os.environ.get("NKIC_DEBUG"):
            raise
        click.echo(
            f"internal error: {type(e).__name__}: {_printable(str(e))} "
            "(this is a bug in nkic; NKIC_DEBUG=1 shows the traceback)",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    finally:
        gc.freeze()


_LNC_OPTION = click.option(
    "--lnc",
    type=click.Choice(["1", "2"]),
    callback=lambda ctx, param, value: int(value) if value else None,
    help="Logical-core degree of the launch: 2 runs the kernel on two physical cores that "
    "share HBM (trn2, trn3).",
)


def _parse_grid(ctx, param, value) -> tuple[int, ...]:
    if not value:
        return ()
    try:
        grid = tuple(int(d) for d in value.split(","))
    except ValueError:
        grid = ()
    if not grid or any(d < 1 for d in grid):
        raise click.BadParameter(f"{value!r}: expected sizes >= 1 separated by commas, e.g. 2,2")
    return grid


_GRID_OPTION = click.option(
    "--grid",
    metavar="D0,D1,...",
    callback=_parse_grid,
    help="Beta 1 SPMD launch grid (kernel[D0, D1, ...]): its programs run one after another "
    "on one NeuronCore.",
)


_REPORT_OPTION = click.option(
    "--report",
    is_flag=True,
    help="Print the resource report: SBUF/PSUM use, instructions per engine, DMA traffic "
    "per HBM tensor, semaphores, each with its limit.",
)


@cli.command()
@click.argument("file")
@click.option("-k", "--kernel", help="Kernel name (optional when the file has one kernel).")
@click.option(
    "--arg",
    "arg_items",
    multiple=True,
    metavar="NAME=SPEC",
    help="Argument: dtype[d0,d1,...] for a tensor, or a Python literal.",
)
@click.option("--target", type=click.Choice(TARGET_NAMES), help=TARGET_HELP)
@click.option("--nki", type=click.Choice(NKI_VERSIONS), help=NKI_HELP)
@click.option("-o", "--output", help="Output .neff path (default: <kernel>.neff).")
@click.option(
    "--emit",
    type=click.Choice(["neff", "ir", "asm"]),
    default="neff",
    show_default=True,
    help="Also print the IR or the per-engine assembly to stdout.",
)
@click.option(
    "--dump-ir-after",
    "dump_after",
    metavar="PASS|all",
    help="Print the IR after the named pass (or after every pass) to stderr.",
)
@_LNC_OPTION
@_GRID_OPTION
@_REPORT_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Format of the --report output.",
)
@click.option(
    "--unroll-loops",
    is_flag=True,
    help="Unroll every loop, symbolic ones included (to compare a loop's cost with its unrolled form).",
)
def compile(
    file,
    kernel,
    arg_items,
    target,
    nki,
    output,
    emit,
    dump_after,
    lnc,
    grid,
    report,
    fmt,
    unroll_loops,
) -> None:
    """Specialise and compile a kernel to a .neff."""
    _check_source(file)
    args = _parse_args(arg_items)
    config = _config(file)
    target = _target(target, config)
    nki = _nki(nki, config)
    if config.args:
        from .frontend import find_kernels

        names = [kernel] if kernel else [name for name, _ in find_kernels(file, language=nki)]
        if len(names) == 1:
            args = _kernel_args(config, file, names[0], args)
    if output:
        _check_writable(output)
    if dump_after:
        from .passes.pipeline import PASS_NAMES

        if dump_after != "all" and dump_after not in PASS_NAMES:
            raise UsageError(f"unknown pass {dump_after!r}; passes: {', '.join(PASS_NAMES)}")
    with Progress(f"compiling {file}"):
        res = driver.compile_file(
            file,
            kernel,
            args,
            target,
            dump_after,
            dump=lambda s: click.echo(s, err=True),
            lnc=lnc or config.lnc or 1,
            grid=grid,
            nki=nki,
            unroll_all=unroll_loops,
        )
    if res.diagnostics:
        shown = with_display_paths(res.diagnostics, {os.path.abspath(file): file})
        click.echo(render_text(shown, color=use_color(sys.stderr)), err=True)
    if not res.ok:
        n = sum(d.severity == "error" for d in res.diagnostics)
        click.echo(f"error: compilation failed with {n} error(s)", err=True)
        sys.exit(EXIT_ERRORS)
    out = output or f"{res.kernel_name}.neff"
    try:
        Path(out).write_bytes(res.neff)
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror}") from None
    if emit == "ir":
        click.echo(res.ir_text, nl=False)
    elif emit == "asm":
        click.echo(res.asm, nl=False)
    click.echo(f"wrote {out} ({len(res.neff)} bytes)", err=True)
    if report:
        from .report import render_report

        click.echo(json.dumps(res.report, indent=2) if fmt == "json" else render_report(res.report))


def _load_program(path: str, limits=None):
    import nkirt

    if not os.path.lexists(path):
        raise UsageError(f"no such file: {path}")
    try:
        return nkirt.load(path, limits or nkirt.Limits())
    except nkirt.NeffError as e:
        raise UsageError(f"{path}: {e}") from None


def _npy_header(path: str, tensor) -> None:
    """Refuse an input file that is not a regular .npy of the parameter's shape before
    numpy allocates what its header declares."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise UsageError(f"--in {tensor.name}: cannot read {path}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"--in {tensor.name}: {path} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, _ = np.lib.format.read_array_header_1_0(f)
            else:
                shape, _, _ = np.lib.format.read_array_header_2_0(f)
        except (ValueError, EOFError, SyntaxError, TypeError):
            raise UsageError(f"--in {tensor.name}: {path} is not a .npy array file") from None
    if tuple(shape) != tensor.shape:
        raise UsageError(
            f"--in {tensor.name}: {path} holds an array of shape {list(shape)}, the kernel "
            f"expects {list(tensor.shape)}"
        )


def _as_input_dtype(name: str, arr: np.ndarray, tensor) -> np.ndarray:
    """`arr` read from a .npy for input `tensor`. bfloat16/fp8 arrays saved by ml_dtypes come
    back as raw bytes (`|V2`, `|V1`): read them as the input's dtype when the sizes agree. Any
    other dtype is converted by the run (round to nearest even), with a note saying so."""
    from nkirt import dtypes

    want = dtypes.storage_dtype(tensor.dtype)
    if arr.dtype.kind == "V":
        if arr.dtype.itemsize != want.itemsize:
            raise UsageError(
                f"--in {name}: the file holds raw {arr.dtype.itemsize}-byte values; the input "
                f"is {tensor.dtype} ({want.itemsize} bytes each)"
            )
        return arr.view(want)
    if arr.dtype != want:
        click.echo(
            f"note: --in {name}: {arr.dtype} array converted to the kernel's "
            f"{tensor.dtype} (round to nearest even)",
            err=True,
        )
    return arr


def _read_inputs(program, items: tuple[str, ...]) -> dict[str, np.ndarray]:
    tensors = {t.name: t for t in program.inputs}
    names = set(tensors)
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise UsageError(f"--in expects NAME=PATH.npy, got {item!r}")
        if name not in names:
            raise UsageError(
                f"--in {name}: the kernel has no input {name!r} "
                f"(inputs: {', '.join(sorted(names)) or 'none'})"
            )
        _npy_header(path, tensors[name])
        try:
            out[name] = np.load(path, allow_pickle=False)
        except OSError as e:
            raise UsageError(f"--in {name}: cannot read {path}: {e.strerror or e}") from None
        except (ValueError, EOFError):
            raise UsageError(f"--in {name}: {path} is not a .npy array file") from None
        out[name] = _as_input_dtype(name, out[name], tensors[name])
    return out


def _widen(a: np.ndarray) -> np.ndarray:
    """bfloat16/fp8 have no .npy type: write them as float32 (exact)."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


@cli.command()
@click.argument("neff")
@click.option(
    "--in",
    "in_items",
    multiple=True,
    metavar="NAME=PATH.npy",
    help="Input array (missing inputs get seeded random data).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--out-dir",
    show_default="nkic-out",
    help="Where outputs are written (created unless --timing-only leaves it unused).",
)
@click.option("--profile", "profile_path", help="Write the profile JSON here.")
@click.option("--trace", "trace_path", help="Write a Chrome/Perfetto trace here.")
@click.option("--timing-only", is_flag=True, help="Skip the numerics; estimate timing only.")
@click.option(
    "--ideal-waits",
    is_flag=True,
    help="What-if: replace the semaphore waits by waits for exactly the conflicting accesses.",
)
@click.option(
    "--parquet",
    "parquet_dir",
    metavar="DIR",
    help="Write Neuron Explorer-style Parquet tables here (needs pip install 'nkic[parquet]').",
)
@click.option(
    "--exact-accumulation",
    is_flag=True,
    help="Sum matmul products in contraction order as the PE array does (slower).",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 when the run produces Inf/NaN from finite inputs."
)
@_LNC_OPTION
@click.option(
    "--max-memory",
    metavar="SIZE",
    help="Host memory a functional run may allocate (e.g. 16G; default 8G).",
)
@click.option(
    "--max-instances",
    type=click.IntRange(min=1),
    help="Instruction instances a run may issue (default 268435456).",
)
def run(
    neff,
    in_items,
    seed,
    out_dir,
    profile_path,
    trace_path,
    timing_only,
    ideal_waits,
    parquet_dir,
    exact_accumulation,
    strict,
    lnc,
    max_memory,
    max_instances,
) -> None:
    """Run a compiled kernel on the simulated NeuronCore."""
    import nkirt

    out = Path(out_dir or "nkic-out")
    try:
        if out_dir is not None or not timing_only:  # a named one may hold --profile/--trace
            out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create --out-dir {out_dir}: {e.strerror or e}") from None
    for path in (profile_path, trace_path):
        if path:
            _check_writable(path)
    program = _load_program(neff, _limits(max_memory, max_instances))
    if lnc is not None and lnc != program.lnc:
        raise UsageError(
            f"{neff} was compiled for LNC={program.lnc}, not LNC={lnc} "
            f"(recompile with nkic compile --lnc {lnc})"
        )
    inputs = _read_inputs(program, in_items)
    try:
        with Progress(f"simulating {neff}"):
            res = nkirt.execute(
                program,
                inputs,
                seed=seed,
                timing_only=timing_only,
                ideal_waits=ideal_waits,
                exact_accumulation=exact_accumulation,
            )
    except nkirt.RunError as e:
        raise UsageError(str(e)) from None
    except nkirt.RuntimeFault as e:
        click.echo(f"runtime fault: {_printable(str(e))}", err=True)
        sys.exit(EXIT_ERRORS)
    try:
        if not timing_only:
            for name, arr in res.outputs.items():
                np.save(out / f"{name}.npy", _widen(arr))
        if profile_path:
            Path(profile_path).write_text(json.dumps(res.profile, indent=2))
        if trace_path:
            Path(trace_path).write_text(json.dumps(res.trace()))
        if parquet_dir:
            from nkirt.explorer_tables import write_parquet

            write_parquet(res, parquet_dir)
    except ImportError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot write output: {e}") from None
    click.echo(res.summary())
    if not timing_only:
        for name in res.outputs:
            click.echo(f"wrote {out / (name + '.npy')}")
    if strict and any(w.get("kind") == "non-finite" for w in res.profile["warnings"]):
        sys.exit(EXIT_ERRORS)


#: Directories `nkic check DIR` never enters (besides every hidden one), as ruff.
SKIPPED_DIRS = frozenset(
    {"__pycache__", "__pypackages__", "_build", "build", "buck-out", "dist", "node_modules",
     "site-packages", "venv"}
)  # fmt: skip


def _expand(paths: tuple[str, ...]) -> list[str]:
    """The Python files named by `paths`, spelled as given: files as they are, directories
    walked recursively in sorted order, skipping hidden and build/virtualenv directories and
    whatever `[tool.nkic] exclude` matches."""
    out: list[str] = []
    for p in paths:
        if os.path.isfile(p):
            out.append(p)
            continue
        if not os.path.isdir(p):
            raise UsageError(f"no such file or directory: {p}")
        for folder, dirs, files in os.walk(p):
            config = _config(folder)
            dirs[:] = sorted(
                d for d in dirs
                if not d.startswith(".") and d not in SKIPPED_DIRS
                and not config.excluded(os.path.join(folder, d))
            )  # fmt: skip
            for f in sorted(files):
                path = os.path.normpath(os.path.join(folder, f))
                if f.endswith(".py") and not config.excluded(path):
                    out.append(path)
    return list(dict.fromkeys(out))


def _codes(option: str | None, default: tuple[str, ...] | None) -> list[str] | None:
    if option is not None:
        return [c.strip() for c in option.split(",") if c.strip()]
    return list(default) if default is not None else None


def _check_one(
    path: str,
    kernel,
    given_args: dict,
    target_option,
    select,
    ignore,
    lnc=None,
    reports=None,
    grid=(),
    nki_option=None,
) -> list:
    from . import diagnostics as dg
    from .frontend import find_kernels

    config = _config(path)
    target = _target(target_option, config)
    nki = _nki(nki_option, config)
    if config.args and not kernel:
        names = [name for name, _ in find_kernels(path, language=nki)]
    else:
        names = [kernel]
    diags = []
    for name in names:
        args = _kernel_args(config, path, name, given_args) if name else given_args
        lnc = lnc or config.lnc
        diags.extend(driver.check_file(path, name, args, target, lnc, reports, grid=grid, nki=nki))
    diags = dg.apply_noqa(diags)
    return dg.filter_diagnostics(
        diags, _codes(select, config.select), _codes(ignore, config.ignore) or None
    )


def _limits(max_memory: str | None, max_instances: int | None):
    import nkirt
    from nkirt.limits import parse_size

    limits = nkirt.Limits()
    try:
        memory = parse_size(max_memory) if max_memory else limits.max_memory
    except ValueError as e:
        raise UsageError(f"--max-memory: {e}") from None
    return nkirt.Limits(memory, max_instances or limits.max_instances)


@cli.command()
@click.argument("files", nargs=-1, required=True)
@click.option("-k", "--kernel", help="Check only this kernel.")
@click.option("--arg", "arg_items", multiple=True, metavar="NAME=SPEC")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
)
@click.option("--target", type=click.Choice(TARGET_NAMES), help=TARGET_HELP)
@click.option("--nki", type=click.Choice(NKI_VERSIONS), help=NKI_HELP)
@click.option("--select", help="Comma-separated codes: report only these.")
@click.option("--ignore", help="Comma-separated codes: never report these.")
@_LNC_OPTION
@_GRID_OPTION
@_REPORT_OPTION
def check(files, kernel, arg_items, fmt, target, nki, select, ignore, lnc, grid, report) -> None:
    """Report every problem in the kernels of FILES (files or directories; exit 1 if any
    error)."""
    from . import diagnostics as dg

    # a misspelt --select would silently hide every error (a misspelt --ignore shows them)
    for pattern in _codes(select, None) or ():
        if not dg.is_code_pattern(pattern):
            raise UsageError(f"--select: no diagnostic code is or starts with {pattern!r}")
    paths = _expand(files)
    args = _parse_args(arg_items)
    if report and fmt not in ("text", "json"):
        raise UsageError(f"--report prints text or json, not {fmt}")
    diags = []
    reports: list[dict] | None = [] if report else None
    with Progress("checking") as progress:
        for n, path in enumerate(paths):
            progress.update(f"checking {path}", n, len(paths))
            diags.extend(
                _check_one(path, kernel, args, target, select, ignore, lnc, reports, grid, nki)
            )
            collect_cycles()
    renderers = {
        "text": lambda ds: dg.render_text(ds, color=use_color(sys.stdout)),
        "json": dg.render_json,
        "sarif": dg.render_sarif,
        "github": dg.render_github,
    }
    if fmt != "sarif":  # SARIF makes its URIs relative to the source root itself
        diags = with_display_paths(diags, {os.path.abspath(p): p for p in paths})
    text = renderers[fmt](diags)
    if reports is not None and fmt == "json":
        # with --report the JSON output is one object: the diagnostics and the reports
        text = json.dumps({"diagnostics": json.loads(text or "[]"), "reports": reports}, indent=2)
    elif reports:
        from .report import render_report

        text = "\n".join([*([text] if text else []), *map(render_report, reports)])
    if text:
        click.echo(text)
    errors = sum(d.severity == "error" for d in diags)
    if fmt == "text":
        warnings = sum(d.severity == "warning" for d in diags)
        files_note = f" in {len(paths)} file(s)" if len(paths) != len(files) else ""
        click.echo(f"{errors} error(s), {warnings} warning(s){files_note}", err=True)
    sys.exit(EXIT_ERRORS if errors else EXIT_OK)


@cli.command()
@click.argument("file")
@click.option("-o", "--output", help="Write the migrated kernel here (default: print a diff).")
@click.option(
    "--to", "to", type=click.Choice(["0.7", "0.3"]), default="0.7", show_default=True,
    help="The NKI version to migrate to (0.7: the current language).",
)  # fmt: skip
@click.option("-k", "--kernel", help="Verify only this kernel.")
@click.option("--arg", "arg_items", multiple=True, metavar="NAME=SPEC",
              help="Kernel arguments: with them, both versions are compiled, run and compared.")  # fmt: skip
@click.option("--target", type=click.Choice(TARGET_NAMES), help=TARGET_HELP)
@_GRID_OPTION
def migrate(file, output, to, kernel, arg_items, target, grid) -> None:
    """Rewrite a Beta 1 (neuronxcc.nki) kernel file into current NKI."""
    from .frontend import find_kernels
    from .migrate import migrate_source, verify

    _check_source(file)
    if output:
        _check_writable(output)
    try:
        source = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {file}: {e}") from None
    try:
        result = migrate_source(source, to, grid)
    except Exception as e:  # libcst's parser: not Python this tool can read
        raise UsageError(f"{file}: cannot parse: {str(e).splitlines()[0]}") from None
    if output:
        Path(output).write_text(result.text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(result.diff(file), nl=False)
    if result.todos:
        from .diagnostics import render_text

        diags = [todo.diagnostic(file) for todo in result.todos]
        click.echo(render_text(diags, color=use_color(sys.stderr)), err=True)
    args = _parse_args(arg_items)
    if not args and not kernel:  # (-k alone verifies a kernel without parameters)
        if not result.todos:
            click.echo("not verified: pass --arg NAME=SPEC for the kernel's arguments", err=True)
        return
    names = [kernel] if kernel else [name for name, _ in find_kernels(file)]
    failed = False
    for name in names:
        outcome = verify(file, result.text, name, args, _target(target, _config(file)), grid=grid)
        click.echo(outcome.describe(), err=True)
        failed |= not outcome.matches
        collect_cycles()
    if failed:
        sys.exit(EXIT_ERRORS)


@cli.command()
@click.argument("code", required=False)
@click.option("--list", "list_codes", is_flag=True, help="List every code with its title.")
def explain(code, list_codes) -> None:
    """Explain a diagnostic code, with a failing and a fixed example."""
    from .codes import CODES
    from .diagnostics import explain as explain_code

    if list_codes:
        width = max(len(c) for c in CODES)
        for info in CODES.values():
            click.echo(f"{info.code:<{width}}  {info.severity:<7}  {info.title}")
        return
    if code is None:
        raise UsageError("give a diagnostic code (nkic explain CODE) or --list")
    try:
        click.echo(explain_code(code))
    except ValueError as e:
        raise UsageError(str(e)) from None


@cli.command()
@click.argument("neff")
@click.option("-o", "--output", required=True, help="Output picture (.svg or .png).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def profile(neff, output, seed) -> None:
    """Simulate a kernel (timing only) and draw its engine timeline."""
    import nkirt
    from nkirt.timeline import picture_format, render_svg

    try:
        picture_format(output)
    except ValueError as e:
        raise UsageError(f"-o {output}: {e}") from None
    _check_writable(output)
    program = _load_program(neff)
    with Progress(f"simulating {neff}") as progress:
        try:
            res = nkirt.execute(program, {}, seed=seed, timing_only=True)
        except nkirt.RunError as e:
            raise UsageError(str(e)) from None
        except nkirt.RuntimeFault as e:
            click.echo(f"runtime fault: {_printable(str(e))}", err=True)
            sys.exit(EXIT_ERRORS)
        progress.update(f"drawing {output}")
        try:
            render_svg(res, output)
        except ImportError as e:
            raise UsageError(str(e)) from None
        except OSError as e:
            raise UsageError(f"cannot write {output}: {e.strerror or e}") from None
    click.echo(f"wrote {output}")


@cli.command()
@click.argument("spec")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (one point per task).")  # fmt: skip
@click.option("-o", "--output", default="sweep.jsonl", show_default=True,
              help="Results, one JSON line per point; points already in it are skipped.")  # fmt: skip
@click.option("--csv", "csv_path", help="Also write every row of the results as CSV here.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None,
              metavar="[ADDRESS]", help="Run on Ray: a local instance, or the cluster at ADDRESS.")  # fmt: skip
@click.option("--plot", "plot_path", metavar="PICTURE",
              help="Draw latency against the parameters (.svg, .png, .pdf; needs nkic[plot]).")  # fmt: skip
def sweep(spec, jobs, output, csv_path, ray_address, plot_path) -> None:
    """Compile and run kernels over a grid of parameters, shapes and targets (docs/sweep.md)."""
    from . import sweep as sw

    try:
        points = sw.load_spec(spec)
    except sw.SpecError as e:
        raise UsageError(str(e)) from None
    if ray_address is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UsageError("--ray needs Ray: pip install 'nkic[ray]'") from None
    for path in (output, csv_path, plot_path):
        if path:
            _check_writable(path)
    if plot_path and Path(plot_path).suffix.lower() not in (".svg", ".png", ".pdf"):
        raise UsageError(f"--plot {plot_path}: use a .svg, .png or .pdf file")
    results = Path(output)
    done = sw.done_keys(results)
    todo = [p for p in points if p.key not in done]
    click.echo(f"{len(points)} points, {len(points) - len(todo)} already in {output}", err=True)
    with sw.open_results(results) as f, Progress("sweeping") as progress:
        count = 0

        def emit(row: dict) -> None:
            nonlocal count
            count += 1
            f.write(json.dumps(row) + "\n")
            f.flush()
            progress.update(done=count, total=len(todo))

        if ray_address is None:
            sw.run_local(todo, jobs, emit)
        else:
            address = None if ray_address == "local" else ray_address
            sw.run_ray(todo, address, str(Path(spec).resolve().parent), emit)
    rows = sw.read_rows(results)
    if csv_path:
        sw.write_csv(rows, Path(csv_path))
    click.echo(sw.summary_table(rows))
    if plot_path:
        try:
            sw.write_plot(rows, Path(plot_path))
        except (ImportError, ValueError) as e:
            raise UsageError(str(e)) from None
        click.echo(f"wrote {plot_path}", err=True)


from .shim.commands import shim as _shim  # noqa: E402  (kept last: a separate group)

cli.add_command(_shim)
