"""`nkic shim install|uninstall|status`: the opt-in hook for the stand-in `nki` package."""

from __future__ import annotations

import click

from . import ShimError, install, status, uninstall


class _ShimUsageError(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


_site = click.option(
    "--site",
    metavar="DIR",
    help="Use this directory instead of the active environment's site-packages.",
)


@click.group()
def shim() -> None:
    """Make `import nki` work without the Neuron SDK (nkic's stand-in; opt-in, undoable)."""


@shim.command("install")
@_site
def install_cmd(site) -> None:
    """Write a .pth hook so that `import nki` finds nkic's stand-in (never over a real nki)."""
    try:
        path = install(site)
    except ShimError as e:
        raise _ShimUsageError(str(e)) from None
    click.echo(f"installed {path}: `import nki` now gives nkic's stand-in in this environment")
    click.echo("undo with: nkic shim uninstall")


@shim.command("uninstall")
@_site
def uninstall_cmd(site) -> None:
    """Remove the .pth hook."""
    try:
        path = uninstall(site)
    except ShimError as e:
        raise _ShimUsageError(str(e)) from None
    click.echo(f"removed {path}" if path else "the hook is not installed; nothing to remove")


@shim.command("status")
@_site
def status_cmd(site) -> None:
    """Say whether the hook is installed and what `import nki` gives."""
    for line in status(site):
        click.echo(line)
