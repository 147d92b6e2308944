"""The stand-in `nki` package: official NKI scripts run on nkic without the Neuron SDK.

Kernel files start with `import nki`. When no real `nki` package is installed, importing
`nkic` (or the `.pth` hook of `nkic shim install`) makes nkic's package in `nkic/shim/root`
importable as `nki`. Its `@nki.jit` marks kernels, which nkic compiles from their source and
runs on the simulated NeuronCore when the script asks for the simulator, as it would ask the
official one: `nki.simulate(kernel)(a, b)`, a direct call `kernel(a, b)` under
`NKI_SIMULATOR=1` or with `@nki.jit(mode="simulation")`, and `kernel[2]` for LNC=2. Any
other API object evaluated outside a kernel is an inert name that refuses to run (kernels
are never executed by Python).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import os
import sys
import tempfile
import textwrap
import types
import warnings
from collections import OrderedDict
from pathlib import Path

from .shim import ROOT

#: `NEURON_PLATFORM_TARGET_OVERRIDE` values, as the official simulator reads them.
PLATFORM_TARGETS = {
    "trn1": "trn1",
    "inf2": "trn1",
    "gen2": "trn1",
    "trn2": "trn2",
    "gen3": "trn2",
    "trn3": "trn3",
    "gen4": "trn3",
}
_OFF = ("", "0", "false", "no", "off")


class NkiApiOutsideKernel(RuntimeError):
    """An NKI API was called from Python instead of being compiled."""


class ApiName:
    """An `nki.*` attribute seen outside a kernel: printable and comparable, not callable."""

    def __init__(self, path: str):
        self.path = path

    def __getattr__(self, name: str) -> ApiName:
        if name.startswith("_"):
            raise AttributeError(name)
        return ApiName(f"{self.path}.{name}")

    def __getitem__(self, key) -> ApiName:
        return ApiName(f"{self.path}[...]")

    def __call__(self, *args, **kwargs):
        raise NkiApiOutsideKernel(
            f"{self.path}() was called from Python: NKI kernels are compiled, not run; "
            "use nkic.compile(kernel, *args) and call the result"
        )

    def __repr__(self) -> str:
        return self.path


def module_getattr(module: str):
    """The `__getattr__` of a stand-in module: an API name for public names; private and
    dunder names raise AttributeError as on any module (tools probe `__file__`, `__path__`,
    `__loader__`, `_fields`, ...)."""

    def __getattr__(name: str) -> ApiName:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return ApiName(f"{module}.{name}")

    return __getattr__


class JitKernel:
    """What `@nki.jit` returns: the kernel function, compiled by nkic when it is run.

    `kernel[lnc]` selects the launch's logical-core degree (1 or 2). Calling the kernel runs
    it on the simulator when the script asks for it (`NKI_SIMULATOR=1`, or
    `mode="simulation"`); otherwise it would need a Neuron device, so the call says how to
    simulate or compile it instead."""

    def __init__(self, fn, lnc: int = 1, **options):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.lnc = lnc
        self.options = options

    def __call__(self, *args, **kwargs):
        if _simulator_requested(self.options):
            return _simulate(self.fn, self.lnc, args, kwargs)
        name = self.fn.__name__
        raise NkiApiOutsideKernel(
            f"kernel {name!r} was called directly, which runs it on a Neuron device, and "
            f"there is none here: set NKI_SIMULATOR=1 to run it on nkic's simulator, call "
            f"nki.simulate({name})(...), or compile it with nkic.compile({name}, *args) and "
            "call the result"
        )

    def __getitem__(self, grid) -> JitKernel:
        if isinstance(grid, tuple) and len(grid) == 1:
            grid = grid[0]
        if isinstance(grid, bool) or not isinstance(grid, int) or grid not in (1, 2):
            raise ValueError(
                f"{self.fn.__name__}[{grid!r}]: the launch grid is the logical-core (LNC) "
                "degree, 1 or 2 (SPMD grids of several dimensions belong to NKI Beta 1)"
            )
        return JitKernel(self.fn, grid, **self.options)

    def __repr__(self) -> str:
        lnc = f"[{self.lnc}]" if self.lnc != 1 else ""
        return f"<nki.jit kernel {self.fn.__qualname__}{lnc}>"


def jit(fn=None, **options):
    """`@nki.jit` and `@nki.jit(...)`: options are kept; `mode="simulation"` makes direct
    calls simulate (other options matter to the Neuron compiler only)."""
    if fn is None:
        return lambda f: JitKernel(f, **options)
    return JitKernel(fn, **options)


class Simulated:
    """What `nki.simulate(kernel)` returns: call it to run the kernel on the simulator."""

    def __init__(self, fn, lnc: int):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.lnc = lnc

    def __call__(self, *args, **kwargs):
        return _simulate(self.fn, self.lnc, args, kwargs)

    def __repr__(self) -> str:
        return f"<nki.simulate of {self.fn.__qualname__}>"


def simulate(kernel) -> Simulated:
    """`nki.simulate(kernel)`: a callable running `kernel` (an `@nki.jit` kernel, `kernel[2]`,
    or a plain function) on nkic's simulated NeuronCore."""
    fn = kernel_function(kernel)
    if fn is None:
        raise TypeError(f"nki.simulate expects a kernel function, got {type(kernel).__name__}")
    return Simulated(fn, getattr(kernel, "lnc", 1))


def _simulator_requested(options: dict) -> bool:
    if options.get("mode") == "simulation":
        return True
    return os.environ.get("NKI_SIMULATOR", "").strip().lower() not in _OFF


def simulation_target() -> str:
    """The target the official simulator would model: `NEURON_PLATFORM_TARGET_OVERRIDE`,
    else nkic's default target."""
    from .driver import DEFAULT_TARGET

    raw = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    if not raw:
        return DEFAULT_TARGET
    if raw not in PLATFORM_TARGETS:
        raise ValueError(
            f"NEURON_PLATFORM_TARGET_OVERRIDE={raw!r}: expected one of "
            f"{', '.join(PLATFORM_TARGETS)}"
        )
    return PLATFORM_TARGETS[raw]


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 32


def _simulate(fn, lnc: int, args: tuple, kwargs: dict, grid: tuple[int, ...] = ()):
    """Compile `fn` for these arguments (cached per shapes, dtypes and values) and run it
    (on the Beta 1 SPMD `grid`, if given): the kernel's results as the caller's kind of
    array; a kernel that returns nothing updates the input arrays it wrote, in place, and
    returns None."""
    from . import arrays

    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fn.__name__}(): {e}") from None
    given = dict(bound.arguments)
    tensors = {k: v for k, v in given.items() if arrays.is_array(v)}
    if os.environ.get("NKI_PRECISE_FP", "1").strip().lower() in _OFF:
        warnings.warn(
            "NKI_PRECISE_FP=0 is not supported by nkic: bfloat16 and fp8 values are always "
            "rounded as the hardware rounds them",
            UserWarning,
            stacklevel=3,
        )
    target = simulation_target()
    options = {"lnc": lnc} if lnc != 1 else {}
    if grid:
        options["grid"] = tuple(grid)
    compiled = _compiled(fn, given, tensors, target, options)
    result = compiled(**tensors)
    if not compiled.returns_nothing:
        return (result,) if _returns_tuple(fn) and not isinstance(result, tuple) else result
    outs = result if isinstance(result, tuple) else (result,)
    for name, out in zip(compiled.output_names, outs):
        arrays.write_back(tensors[name], arrays.to_numpy(out), name)
    return None


@functools.lru_cache(maxsize=256)
def _returns_tuple(fn) -> bool:
    """True when the kernel's `return` statements build a tuple (`return (out,)`), so that a
    single returned tensor comes back as a 1-tuple, as the kernel wrote it."""

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    found = []

    def visit(node, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                if top:
                    visit(child, False)
                continue
            if isinstance(child, ast.Return) and child.value is not None:
                found.append(isinstance(child.value, (ast.Tuple, ast.List)))
            visit(child, top)

    visit(tree, True)
    return bool(found) and all(found)


def _compiled(fn, given: dict, tensors: dict, target: str, options: dict):
    from . import arrays

    named = {k: arrays.to_numpy(v) if k in tensors else v for k, v in given.items()}
    key = None
    try:
        key = (fn, target, tuple(sorted(options.items())))
        key += tuple(
            (k, (v.shape, v.dtype.str, v.dtype.name) if k in tensors else v)
            for k, v in named.items()
        )
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    compiled = _compile_script(fn, named, target, options)
    if key is not None:
        _CACHE[key] = compiled
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def _compile_script(fn, named: dict, target: str, options: dict):
    """Compile `fn`; when the only errors lie in host statements at the top level of its file
    (array set-up, the `nki.simulate` call, asserts: code for Python, not for the kernel),
    compile a copy of the file without those statements instead. Any other failure, or a
    kernel that needed one of them, raises the original errors."""
    from . import api
    from .diagnostics import CompileError

    printed = io.StringIO()  # compile-time print() output, shown once the compile succeeds
    try:
        with contextlib.redirect_stderr(printed):
            compiled = api.compile_named(fn, named, target, **options)
        sys.stderr.write(printed.getvalue())
        return compiled
    except CompileError as first:
        path = inspect.getsourcefile(fn)
        if path is None or (Path(path).parent / "__init__.py").exists():
            raise  # inside a package: relative imports need the file where it is
        path = os.path.abspath(path)
        lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
        errors = first.diagnostics
        with tempfile.TemporaryDirectory(prefix="nkic-script-") as tmp:
            copy = Path(tmp) / Path(path).name
            for _ in range(4):
                spans = _host_statements(path, lines, errors)
                if not spans:
                    raise first from None
                spans += _top_level_calls(lines)  # print(...) etc. ran in Python already
                for start, end in spans:
                    lines[start - 1 : end] = ["\n"] * (end - start + 1)
                copy.write_text("".join(lines), encoding="utf-8")
                try:
                    return api._compile(str(copy), fn.__name__, named, target, **options)
                except CompileError as again:
                    errors = [
                        dataclasses.replace(d, loc=_moved(d.loc, str(copy), path))
                        for d in again.diagnostics
                    ]
        raise first from None


def _moved(loc, old: str, new: str):
    return dataclasses.replace(loc, file=new) if loc.file == old else loc


def _top_level_calls(lines: list[str]) -> list[tuple[int, int]]:
    tree = ast.parse("".join(lines))
    return [
        (s.lineno, s.end_lineno or s.lineno)
        for s in tree.body
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
    ]


def _host_statements(path: str, lines: list[str], errors) -> list[tuple[int, int]]:
    """(first, last) lines of the top-level statements of `path` holding `errors`, when every
    error lies in such a statement that is host code (not a def, class or import)."""
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return []
    spans = []
    for d in errors:
        if d.severity != "error":
            continue
        if d.loc.file != path:
            return []
        stmt = next(
            (s for s in tree.body if s.lineno <= d.loc.line <= (s.end_lineno or s.lineno)), None
        )
        kernel_code = (
            ast.FunctionDef,
            ast.AsyncFunctionDef,
            ast.ClassDef,
            ast.Import,
            ast.ImportFrom,
        )
        if stmt is None or isinstance(stmt, kernel_code):
            return []
        spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
    return sorted(set(spans))


class NKIObject:
    """`nl.NKIObject` in host code: a real base class, so that configuration objects can be
    built in Python and passed to kernels. Like the NKI class, it synthesises
    `__init__(self, f1=None, f2=default, ...)` from the annotated fields and calls
    `__post_init__`."""

    def __init__(self, *args, **kwargs):
        names = [n for c in reversed(type(self).__mro__) for n in getattr(c, "__annotations__", {})]
        fields = list(dict.fromkeys(names))
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes at most {len(fields)} field values")
        for name in fields:
            setattr(self, name, getattr(type(self), name, None))
        for name, value in zip(fields, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            setattr(self, name, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()


class _StandinFinder(importlib.abc.MetaPathFinder):
    """Finds `nki` in nkic/shim/root; last on sys.meta_path, so a real `nki` always wins."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "nki":
            return None  # submodules are found through the package's __path__
        return importlib.machinery.PathFinder.find_spec(fullname, [str(ROOT)])


def install() -> None:
    """Make the stand-in importable unless a real `nki` is installed."""
    if any(isinstance(f, _StandinFinder) for f in sys.meta_path):
        return
    if "nki" not in sys.modules and importlib.util.find_spec("nki") is None:
        sys.meta_path.append(_StandinFinder())


def kernel_function(obj):
    """The Python function behind a kernel object (`@nki.jit` of either nki), or None."""
    for attr in ("fn", "func", "__wrapped__"):
        inner = getattr(obj, attr, None)
        if isinstance(inner, types.FunctionType):
            return inner
    return obj if isinstance(obj, types.FunctionType) else None
