"""The stand-in `neuronxcc.nki` package: Beta 1 scripts run on nkic without the Neuron SDK.

A Beta 1 script imports `neuronxcc.nki` (`from neuronxcc import nki`). When no real
`neuronxcc` is installed, importing `nkic` makes nkic's package in `nkic/shim/root`
importable as `neuronxcc`. Its entry points mark kernels, which nkic compiles from their
source and runs on the simulated NeuronCore: a direct call `kernel(a, b)` (every Beta 1 mode
needs a device or the simulator; nkic is the simulator), an SPMD launch `kernel[2, 2](a, b)`,
`nki.simulate_kernel(kernel, a, b)`, and the kernels `nki.baremetal(...)`, `nki.benchmark(...)`
and `nki.profile(...)` return (their device options do not apply).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from .shim import ROOT
from .standin import _simulate, kernel_function


class Beta1Kernel:
    """A Beta 1 kernel: calling it compiles it for the arguments and runs it on the simulator;
    `kernel[d0, d1, ...]` is its launch on an SPMD grid of programs."""

    def __init__(self, fn, grid: tuple[int, ...] = (), **options):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.grid = grid
        self.options = options

    def __call__(self, *args, **kwargs):
        return _simulate(self.fn, 1, args, kwargs, grid=self.grid)

    def __getitem__(self, grid) -> Beta1Kernel:
        dims = grid if isinstance(grid, tuple) else (grid,)
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
            raise ValueError(
                f"{self.fn.__name__}[{grid!r}]: an SPMD grid is one or more positive integers, "
                "e.g. kernel[2, 2]"
            )
        return Beta1Kernel(self.fn, dims, **self.options)

    def __repr__(self) -> str:
        grid = f"[{', '.join(map(str, self.grid))}]" if self.grid else ""
        return f"<neuronxcc.nki kernel {self.fn.__qualname__}{grid}>"


def entry_point(fn=None, **options):
    """`@nki.jit`, `@nki.baremetal`, `@nki.benchmark(warmup=...)`, ...: with or without
    options, the decorated function as a `Beta1Kernel`."""
    if fn is None:
        return lambda f: Beta1Kernel(f, **options)
    return Beta1Kernel(fn, **options)


def simulate_kernel(kernel, *args, **kwargs):
    """`nki.simulate_kernel(kernel, a, b)`: run the kernel on the simulator."""
    fn = kernel_function(kernel)
    if fn is None:
        raise TypeError(
            f"nki.simulate_kernel expects a kernel function, got {type(kernel).__name__}"
        )
    return _simulate(fn, 1, args, kwargs, grid=getattr(kernel, "grid", ()))


class NeuronCores(int):
    """`nl.nc(n)`: n physical NeuronCores in an SPMD launch annotation; as a grid size (also
    multiplied, `nl.nc(2) * 2`) the number of programs along that axis."""

    def __mul__(self, other):
        return int(self) * int(other)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"nl.nc({int(self)})"


def nc(n: int) -> NeuronCores:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"nl.nc({n!r}): the number of NeuronCores is a positive integer")
    return NeuronCores(n)


def spmd_dim(*factors) -> int:
    """`nl.spmd_dim(nl.nc(2), 2)`: one grid axis of the product of its factors (the order
    only assigns programs to cores)."""
    size = 1
    for f in factors:
        if isinstance(f, bool) or not isinstance(f, int) or f < 1:
            raise ValueError(f"nl.spmd_dim: {f!r} is not a positive integer or nl.nc(n)")
        size *= int(f)
    return size


class _StandinFinder(importlib.abc.MetaPathFinder):
    """Finds `neuronxcc` in nkic/shim/root; last on sys.meta_path, so a real one wins."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "neuronxcc":
            return None  # submodules are found through the package's __path__
        return importlib.machinery.PathFinder.find_spec(fullname, [str(ROOT)])


def install() -> None:
    """Make the stand-in importable unless a real `neuronxcc` is installed."""
    if any(isinstance(f, _StandinFinder) for f in sys.meta_path):
        return
    if "neuronxcc" not in sys.modules and importlib.util.find_spec("neuronxcc") is None:
        sys.meta_path.append(_StandinFinder())
