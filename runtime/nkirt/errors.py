"""The runtime's exceptions: a bad `.neff`, a bad run request, a fault while executing."""

from __future__ import annotations


class NeffError(Exception):
    """The `.neff` container or its program is malformed (one-line message, no traceback)."""


class RunError(Exception):
    """A run was requested with arguments that do not fit the program (e.g. an input shape)."""


class RuntimeFault(Exception):
    """The simulated NeuronCore faulted; the message names the instruction and its source line."""
