"""nkic's stand-in for the `nki` package of the Neuron SDK.

Kernels decorated with `@nki.jit` are compiled from their source by nkic and run on its
simulated NeuronCore: `nki.simulate(kernel)(a, b)`, a direct call `kernel(a, b)` under
`NKI_SIMULATOR=1` (or with `@nki.jit(mode="simulation")`), and `kernel[2]` for LNC=2.
Arguments may be numpy, torch or jax arrays; results come back as the same kind of array.
Any other `nki.*` name evaluated outside a kernel is an inert name (kernels are never run by
Python). `NKI_STANDIN` tells this package from the real one.
"""

from nkic.standin import jit, module_getattr, simulate

from . import collectives, compiler, isa, language, typing

NKI_STANDIN = True

__all__ = ["jit", "simulate", "language", "isa", "typing", "collectives", "compiler"]
__getattr__ = module_getattr(__name__)

del module_getattr
