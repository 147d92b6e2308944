"""`nki.language` of nkic's stand-in `nki` package: the names kernels use, compiled by nkic
from the kernel's source; outside a kernel each is an inert name that refuses to run.
`NKIObject` is a real base class, so that configuration objects can be built in Python."""

from nkic.standin import NKIObject, module_getattr

__all__ = ["NKIObject"]
__getattr__ = module_getattr(__name__)
del module_getattr
