"""A stand-in `nki` package so kernel modules import on machines without the Neuron SDK.

Kernel files start with `import nki`; to pass a kernel function to `nkic.compile`, its module
must import. When no real `nki` package is installed, importing `nkic` makes `nki`,
`nki.language`, `nki.isa` and `nki.typing` importable: `@nki.jit` marks the function, and any
API object evaluated outside a kernel is an inert name that refuses to run (kernels are never
executed by Python; nkic compiles their source).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

SUBMODULES = ("language", "isa", "typing", "collectives")


class NkiApiOutsideKernel(RuntimeError):
    """An NKI API was called from Python instead of being compiled."""


class ApiName:
    """An `nki.*` attribute seen outside a kernel: printable and comparable, not callable."""

    def __init__(self, path: str):
        self.path = path

    def __getattr__(self, name: str) -> ApiName:
        if name.startswith("__"):
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


class JitKernel:
    """What `@nki.jit` returns: the kernel function, compiled on demand by nkic."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        raise NkiApiOutsideKernel(
            f"kernel {self.__name__!r} was called directly: compile it with "
            f"nkic.compile({self.__name__}, *args) and call the result"
        )

    def __getitem__(self, grid):
        """`kernel[2]`: the kernel launched on an LNC of that degree (nkic.compile reads it)."""
        launched = JitKernel(self.fn, **self.options)
        launched.grid = grid
        return launched


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


def jit(fn=None, **options):
    if fn is None:
        return lambda f: JitKernel(f, **options)
    return JitKernel(fn, **options)


def _module(name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__getattr__ = lambda attr: ApiName(f"{name}.{attr}")  # type: ignore[attr-defined]
    return mod


class _StandinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "nki" or (fullname.startswith("nki.") and fullname[4:] in SUBMODULES):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == "nki")
        return None

    def create_module(self, spec):
        if spec.name == "nki":
            mod = _module("nki")
            mod.jit = jit
            mod.__path__ = []
            mod.NKI_STANDIN = True
            return mod
        mod = _module(spec.name)
        if spec.name == "nki.language":
            mod.NKIObject = NKIObject
        return mod

    def exec_module(self, module):
        return None


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
