"""Standard modules that host code reads at import, modelled without touching the machine nkic
runs on: the process environment starts empty, `os.path` offers its pure string functions. What these models leave out is an error only where evaluated code uses it."""

from __future__ import annotations

import posixpath

from .values import Builtin, HostModule, UserError


class ProcessEnvironment(dict):
    """`os.environ`: empty when nkic starts evaluating a kernel, so that the kernel compiles
    the same everywhere; what host code sets in it, evaluated code reads back."""

    def __repr__(self) -> str:
        return f"environ({dict.__repr__(self)})"


ENVIRONMENT_HINT = (
    "nkic models the process environment as empty, so a kernel compiles the same on every "
    "machine; pass settings to the kernel as arguments"
)


def environment_missing(key) -> UserError:
    """`os.environ[key]` of a variable nobody set: a KeyError in Python."""
    return UserError(
        "err_value_error", f"os.environ has no variable {key!r}", None, ENVIRONMENT_HINT
    )


def _getenv(environ: ProcessEnvironment) -> Builtin:
    def getenv(ip, call, key, default=None):
        if not isinstance(key, str):
            raise UserError("err_type_error", "os.getenv: the variable name must be a string")
        return environ.get(key, default)

    return Builtin("os.getenv", getenv)


def _strings(name: str, args) -> list[str]:
    if not all(isinstance(a, str) for a in args):
        raise UserError("err_type_error", f"os.path.{name} takes strings")
    return list(args)


def _path_fn(name: str):
    fn = getattr(posixpath, name)

    def call(ip, call_, *args):
        result = fn(*_strings(name, [ip.deep_concrete(a) for a in args]))
        return list(result) if isinstance(result, tuple) else result

    return Builtin(f"os.path.{name}", call)


#: os.path functions that compute on the path string alone (no file system, no working
#: directory), with POSIX separators: the paths NKI kernels run with.
PURE_PATH_FUNCTIONS = (
    "join", "basename", "dirname", "split", "splitext", "normpath", "isabs", "commonprefix",
)  # fmt: skip


def host_modules() -> dict[str, HostModule]:
    path = HostModule(
        "os.path",
        {name: _path_fn(name) for name in PURE_PATH_FUNCTIONS} | {"sep": "/", "extsep": "."},
        "it reads the file system or the working directory of the machine nkic runs on",
    )
    environ = ProcessEnvironment()
    os = HostModule(
        "os",
        {
            "environ": environ,
            "getenv": _getenv(environ),
            "path": path,
            "sep": "/",
            "linesep": "\n",
        },
        "it reads or changes the state of the machine nkic runs on",
    )
    return {"os": os, "os.path": path}
