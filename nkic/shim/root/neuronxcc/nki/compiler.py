"""`neuronxcc.nki.compiler` of nkic's stand-in: the names kernels use, compiled by nkic from the
kernel's source; outside a kernel each is an inert name that refuses to run."""

from nkic.standin import module_getattr

__getattr__ = module_getattr(__name__)
del module_getattr
