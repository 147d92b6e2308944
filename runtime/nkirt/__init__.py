"""nkirt: the cycle-approximate NeuronCore simulator that runs `.neff` files written by nkic."""

from nkirt.errors import NeffError, RunError, RuntimeFault
from nkirt.limits import Limits
from nkirt.profile import RunResult
from nkirt.program import Program, TensorInfo
from nkirt.run import execute, load

__all__ = [
    "Limits",
    "NeffError",
    "Program",
    "RunError",
    "RunResult",
    "RuntimeFault",
    "TensorInfo",
    "execute",
    "load",
]
