"""`[tool.nkic]` in the nearest pyproject.toml: project defaults for the command line.

    [tool.nkic]
    target = "trn2"                  # default --target
    lnc = 2                          # default --lnc of compile and check (1 or 2)
    nki = "0.7"                      # default --nki (NKI language version)
    select = ["err_"]                # default --select (codes or code prefixes)
    ignore = ["err_unknown_api"]     # default --ignore
    exclude = ["build", "legacy/*"]  # paths `nkic check DIR` skips (glob, relative to the file)

    [tool.nkic.args]                 # default --arg values per kernel
    "kernels/add.py::tensor_add" = { a = "float32[128,512]", b = "float32[128,512]" }
    softmax = { x = "bfloat16[128,1024]" }     # any kernel of that name

The nearest pyproject.toml is searched from the kernel file's directory upwards (a file without
`[tool.nkic]` is skipped, as ruff does). Options given on the command line win over the file;
an `--arg` replaces the file's value of that parameter only.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KEYS = ("target", "lnc", "nki", "select", "ignore", "exclude", "args")


class ConfigError(ValueError):
    """A malformed `[tool.nkic]` table: the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    """The `[tool.nkic]` table of one pyproject.toml (`path` None: no table found)."""

    path: Path | None = None
    target: str | None = None
    lnc: int | None = None
    nki: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    #: kernel name, or "relative/path.py::kernel", to {parameter: spec string}
    args: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def kernel_args(self, file: str | os.PathLike, kernel: str) -> dict[str, str]:
        """The default `--arg` specs of `kernel` in `file`: a "path::kernel" entry wins over a
        plain "kernel" one."""
        out = dict(self.args.get(kernel, {}))
        rel = _relative(Path(file), self.root)
        if rel is not None:
            out.update(self.args.get(f"{rel}::{kernel}", {}))
        return out

    def excluded(self, path: str | os.PathLike) -> bool:
        """True when `path` matches an `exclude` pattern (its path relative to the project root,
        or any one of its parts)."""
        rel = _relative(Path(path), self.root)
        names = [rel] if rel is not None else []
        names += list(Path(path).parts)
        return any(fnmatch.fnmatch(n, pat.rstrip("/")) for pat in self.exclude for n in names)


def _relative(path: Path, root: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


_CACHE: dict[Path, Config] = {}


def config_for(path: str | os.PathLike) -> Config:
    """The `[tool.nkic]` table of the nearest pyproject.toml above `path` (a file or a
    directory); an empty Config when there is none. Raises ConfigError when it is malformed."""
    start = Path(os.path.abspath(path))
    if not start.is_dir():
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate in _CACHE:
            return _CACHE[candidate]
        if candidate.is_file():
            table = _read_table(candidate)
            if table is not None:
                _CACHE[candidate] = config = _parse(candidate, table)
                return config
    return Config()


def _read_table(path: Path) -> dict | None:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read it: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    table = doc.get("tool", {}).get("nkic")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.nkic] must be a table")
    return table


def _strings(path: Path, key: str, value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.nkic] {key} must be a list of strings")
    return tuple(value)


def _parse(path: Path, table: dict) -> Config:
    from .ir.target import TARGET_NAMES

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [tool.nkic]: {', '.join(unknown)} "
            f"(known: {', '.join(KEYS)})"
        )
    target = table.get("target")
    if target is not None and target not in TARGET_NAMES:
        raise ConfigError(
            f"{path}: [tool.nkic] target = {target!r}: expected one of {', '.join(TARGET_NAMES)}"
        )
    lnc = table.get("lnc")
    if lnc is not None and (isinstance(lnc, bool) or lnc not in (1, 2)):
        raise ConfigError(f"{path}: [tool.nkic] lnc = {lnc!r}: expected 1 or 2")
    nki = table.get("nki")
    if nki is not None:
        from .frontend.languages import VERSIONS

        if nki not in VERSIONS:
            raise ConfigError(
                f"{path}: [tool.nkic] nki = {nki!r}: expected one of {', '.join(VERSIONS)}"
            )
    args: dict[str, dict[str, str]] = {}
    raw_args = table.get("args", {})
    if not isinstance(raw_args, dict):
        raise ConfigError(f"{path}: [tool.nkic.args] must be a table of kernel = {{...}}")
    for kernel, params in raw_args.items():
        if not isinstance(params, dict):
            raise ConfigError(
                f"{path}: [tool.nkic.args] {kernel} must be a table of parameter = spec"
            )
        specs = {}
        for name, spec in params.items():
            if not isinstance(spec, (str, int, float)):
                raise ConfigError(
                    f"{path}: [tool.nkic.args] {kernel}.{name}: expected a spec string such "
                    f'as "bfloat16[128,512]" or a number'
                )
            specs[name] = spec if isinstance(spec, str) else repr(spec)
        args[kernel] = specs
    return Config(
        path=path,
        target=target,
        lnc=lnc,
        nki=nki,
        select=_strings(path, "select", table["select"]) if "select" in table else None,
        ignore=_strings(path, "ignore", table.get("ignore", [])),
        exclude=_strings(path, "exclude", table.get("exclude", [])),
        args=args,
    )
