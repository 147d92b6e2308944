"""`neuronxcc.nki.language` of nkic's stand-in: the names kernels use, compiled by nkic from
the kernel's source; outside a kernel each is an inert name that refuses to run. The launch
annotations `nc` and `spmd_dim` are real: `kernel[nl.spmd_dim(nl.nc(2), 2), 2]` is a grid of
4 x 2 programs, which nkic runs one after another on its one simulated core (the programs
are independent, so their results do not depend on the core that runs them)."""

from nkic.standin import module_getattr
from nkic.standin_beta1 import nc, spmd_dim

__all__ = ["nc", "spmd_dim"]
__getattr__ = module_getattr(__name__)
del module_getattr
