"""The `nkic` command line: compile, run, check, explain, profile."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import numpy as np

from . import driver
from .diagnostics import render_text
from .ir.target import TARGET_NAMES

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(click.ClickException):
    """A bad command line or unreadable input: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


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


def _check_source(path: str) -> None:
    if not Path(path).is_file():
        raise UsageError(f"no such kernel file: {path}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nkic")
def cli() -> None:
    """nkic: compile NKI kernels ahead of time and run them on a simulated NeuronCore."""


def main() -> None:
    """Console entry point: user errors are one line; an internal error is one line too."""
    try:
        cli(prog_name="nkic")
    except Exception as e:
        if os.environ.get("NKIC_DEBUG"):
            raise
        click.echo(
            f"internal error: {type(e).__name__}: {e} "
            "(this is a bug in nkic; NKIC_DEBUG=1 shows the traceback)",
            err=True,
        )
        sys.exit(EXIT_USAGE)


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
@click.option(
    "--target", type=click.Choice(TARGET_NAMES), default=driver.DEFAULT_TARGET, show_default=True
)
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
@click.option(
    "--unroll-loops",
    is_flag=True,
    help="Unroll every loop, symbolic ones included (to compare a loop's cost with its unrolled form).",
)
def compile(file, kernel, arg_items, target, output, emit, dump_after, unroll_loops) -> None:
    """Specialise and compile a kernel to a .neff."""
    _check_source(file)
    args = _parse_args(arg_items)
    if dump_after:
        from .passes.pipeline import PASS_NAMES

        if dump_after != "all" and dump_after not in PASS_NAMES:
            raise UsageError(f"unknown pass {dump_after!r}; passes: {', '.join(PASS_NAMES)}")
    res = driver.compile_file(
        file,
        kernel,
        args,
        target,
        dump_after,
        dump=lambda s: click.echo(s, err=True),
        unroll_all=unroll_loops,
    )
    if res.diagnostics:
        click.echo(render_text(res.diagnostics), err=True)
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


def _load_program(path: str):
    import nkirt

    try:
        return nkirt.load(path)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except nkirt.NeffError as e:
        raise UsageError(f"{path}: {e}") from None


def _read_inputs(program, items: tuple[str, ...]) -> dict[str, np.ndarray]:
    names = {t.name for t in program.inputs}
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
        try:
            out[name] = np.load(path, allow_pickle=False)
        except OSError as e:
            raise UsageError(f"--in {name}: cannot read {path}: {e.strerror or e}") from None
        except ValueError:
            raise UsageError(f"--in {name}: {path} is not a .npy array file") from None
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
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out-dir", default=".", show_default=True, help="Where outputs are written.")
@click.option("--profile", "profile_path", help="Write the profile JSON here.")
@click.option("--trace", "trace_path", help="Write a Chrome/Perfetto trace here.")
@click.option("--timing-only", is_flag=True, help="Skip the numerics; estimate timing only.")
@click.option(
    "--ideal-waits",
    is_flag=True,
    help="What-if: replace the semaphore waits by waits for exactly the conflicting accesses.",
)
def run(neff, in_items, seed, out_dir, profile_path, trace_path, timing_only, ideal_waits) -> None:
    """Run a compiled kernel on the simulated NeuronCore."""
    import nkirt

    program = _load_program(neff)
    inputs = _read_inputs(program, in_items)
    try:
        res = nkirt.execute(
            program, inputs, seed=seed, timing_only=timing_only, ideal_waits=ideal_waits
        )
    except nkirt.RunError as e:
        raise UsageError(str(e)) from None
    except nkirt.RuntimeFault as e:
        click.echo(f"runtime fault: {e}", err=True)
        sys.exit(EXIT_ERRORS)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not timing_only:
            for name, arr in res.outputs.items():
                np.save(out / f"{name}.npy", _widen(arr))
        if profile_path:
            Path(profile_path).write_text(json.dumps(res.profile, indent=2))
        if trace_path:
            Path(trace_path).write_text(json.dumps(res.trace()))
    except OSError as e:
        raise UsageError(f"cannot write output: {e}") from None
    click.echo(res.summary())
    if not timing_only:
        for name in res.outputs:
            click.echo(f"wrote {out / (name + '.npy')}")


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
@click.option(
    "--target", type=click.Choice(TARGET_NAMES), default=driver.DEFAULT_TARGET, show_default=True
)
@click.option("--select", help="Comma-separated codes: report only these.")
@click.option("--ignore", help="Comma-separated codes: never report these.")
def check(files, kernel, arg_items, fmt, target, select, ignore) -> None:
    """Report every problem in the kernels of FILES (exit 1 if any error)."""
    from . import diagnostics as dg

    for f in files:
        _check_source(f)
    args = _parse_args(arg_items)
    diags = []
    for f in files:
        diags.extend(driver.check_file(f, kernel, args, target))
    diags = dg.apply_noqa(diags)
    split = lambda s: [c.strip() for c in s.split(",") if c.strip()] if s else None  # noqa: E731
    diags = dg.filter_diagnostics(diags, split(select), split(ignore))
    renderers = {
        "text": dg.render_text,
        "json": dg.render_json,
        "sarif": dg.render_sarif,
        "github": dg.render_github,
    }
    text = renderers[fmt](diags)
    if text:
        click.echo(text)
    errors = sum(d.severity == "error" for d in diags)
    if fmt == "text":
        warnings = sum(d.severity == "warning" for d in diags)
        click.echo(f"{errors} error(s), {warnings} warning(s)", err=True)
    sys.exit(EXIT_ERRORS if errors else EXIT_OK)


@cli.command()
@click.argument("code")
def explain(code) -> None:
    """Explain a diagnostic code, with a failing and a fixed example."""
    from .diagnostics import explain as explain_code

    try:
        click.echo(explain_code(code))
    except ValueError as e:
        raise UsageError(str(e)) from None


@cli.command()
@click.argument("neff")
@click.option("-o", "--output", required=True, help="Output picture (.svg or .png).")
@click.option("--seed", type=int, default=0, show_default=True)
def profile(neff, output, seed) -> None:
    """Simulate a kernel (timing only) and draw its engine timeline."""
    import nkirt
    from nkirt.timeline import render_svg

    program = _load_program(neff)
    res = nkirt.execute(program, {}, seed=seed, timing_only=True)
    try:
        render_svg(res, output)
    except ImportError as e:
        raise UsageError(str(e)) from None
    click.echo(f"wrote {output}")
