"""nkirt: the cycle-approximate NeuronCore simulator that runs `.neff` files written by nkic."""

from nkirt.errors import NeffError, RunError, RuntimeFault
from nkirt.profile import RunResult
from nkirt.program import Program, TensorInfo
from nkirt.run import execute, load

__all__ = [
    "NeffError",
    "Program",
    "RunError",
    "RunResult",
    "RuntimeFault",
    "TensorInfo",
    "execute",
    "load",
]
