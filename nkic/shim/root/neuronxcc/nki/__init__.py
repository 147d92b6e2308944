"""nkic's stand-in for `neuronxcc.nki` (NKI Beta 1).

Kernels marked by `@nki.jit` (any mode), `@nki.baremetal`, `@nki.benchmark(...)`,
`@nki.profile(...)` or `@nki.trace` are compiled from their source by nkic and run on its
simulated NeuronCore when called: `kernel(a, b)`, `kernel[2, 2](a, b)` (an SPMD grid), or
`nki.simulate_kernel(kernel, a, b)`. Any other `nki.*` name evaluated outside a kernel is an
inert name (kernels are never run by Python). `NKI_STANDIN` tells this package from the real
one.
"""

from nkic.standin import module_getattr
from nkic.standin_beta1 import entry_point, simulate_kernel

from . import compiler, isa, language, typing

jit = baremetal = benchmark = profile = trace = entry_point
NKI_STANDIN = True

__all__ = [
    "jit", "baremetal", "benchmark", "profile", "trace", "simulate_kernel",
    "language", "isa", "typing", "compiler",
]  # fmt: skip
__getattr__ = module_getattr(__name__)

del module_getattr
