"""The stand-in `nki` package and the opt-in hook that makes it importable without `nkic`.

`root/nki` is a small package (`nki`, `nki.language`, `nki.isa`, `nki.typing`,
`nki.collectives`, `nki.compiler`) whose kernels nkic compiles and simulates. `import nkic`
makes it importable when no real `nki` is installed; `nkic shim install` writes a `.pth` file
into the active environment so that `import nki` finds it in every interpreter of that
environment, still after any real `nki` (the `.pth` line is appended to the end of `sys.path`,
and installing is refused when a real `nki` exists).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from pathlib import Path

#: The directory holding the stand-in `nki` package (what the `.pth` hook adds to sys.path).
ROOT = Path(__file__).resolve().parent / "root"
#: The name of the hook file in site-packages.
PTH_NAME = "nkic-nki-standin.pth"


class ShimError(Exception):
    """The hook cannot be installed or removed; the message says why and what to do."""


def site_dir() -> Path:
    """The active environment's site-packages (where `pip install` puts pure-Python files)."""
    return Path(sysconfig.get_paths()["purelib"])


def real_nki() -> str | None:
    """Where a real (non-stand-in) `nki` package would be imported from, or None."""
    paths = []
    for p in sys.path:
        try:
            if Path(p or os.getcwd()).resolve() == ROOT:
                continue
        except OSError:
            continue
        paths.append(p)
    spec = importlib.machinery.PathFinder.find_spec("nki", paths)
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in"):
        return str(Path(spec.origin).parent if spec.origin.endswith("__init__.py") else spec.origin)
    return next(iter(spec.submodule_search_locations or []), "an unknown location")


def hook_path(site: str | os.PathLike | None = None) -> Path:
    return Path(site) if site is not None else site_dir()


def install(site: str | os.PathLike | None = None) -> Path:
    """Write the `.pth` hook into `site` (default: the active environment); its path."""
    found = real_nki()
    if found is not None:
        raise ShimError(
            f"a real nki package is installed ({found}); nkic will not shadow it. "
            "Scripts use it as they are (uninstall it first to use nkic's stand-in instead)"
        )
    path = hook_path(site) / PTH_NAME
    text = (
        "# nkic: makes nkic's stand-in `nki` package importable; remove with "
        "`nkic shim uninstall`\n"
        f"{ROOT}\n"
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ShimError(f"cannot write {path}: {e.strerror or e}") from None
    return path


def uninstall(site: str | os.PathLike | None = None) -> Path | None:
    """Remove the hook; the removed file's path, or None if it was not installed."""
    path = hook_path(site) / PTH_NAME
    if not path.exists():
        return None
    try:
        path.unlink()
    except OSError as e:
        raise ShimError(f"cannot remove {path}: {e.strerror or e}") from None
    return path


def status(site: str | os.PathLike | None = None) -> list[str]:
    """Lines describing the hook and what `import nki` gives in this environment."""
    path = hook_path(site) / PTH_NAME
    lines = [f"hook: {'installed' if path.exists() else 'not installed'} ({path})"]
    found = real_nki()
    if found is not None:
        lines.append(f"import nki: the real nki at {found} (the stand-in stays inactive)")
    elif path.exists():
        lines.append(f"import nki: nkic's stand-in ({ROOT / 'nki'})")
    else:
        lines.append(
            "import nki: nkic's stand-in after `import nkic`, otherwise not importable "
            "(`nkic shim install` makes it importable everywhere in this environment)"
        )
    return lines
