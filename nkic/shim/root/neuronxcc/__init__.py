"""nkic's stand-in for the `neuronxcc` package of the Neuron SDK: only `neuronxcc.nki`, the
Beta 1 NKI (see `neuronxcc.nki`)."""

from . import nki

NKI_STANDIN = True
__all__ = ["nki"]
