"""The runtime's exceptions: a bad `.neff`, a bad run request, a fault while executing."""

from __future__ import annotations

import unicodedata


def printable(text: str) -> str:
    """`text` with control and format characters (terminal escapes) shown as escapes, so
    that names from an untrusted `.neff` never drive the terminal."""
    if all(unicodedata.category(c)[0] != "C" for c in text):
        return text
    return "".join(
        c if unicodedata.category(c)[0] != "C" else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


class NeffError(Exception):
    """The `.neff` container or its program is malformed (one-line message, no traceback)."""


class RunError(Exception):
    """A run was requested with arguments that do not fit the program (e.g. an input shape)."""


class RuntimeFault(Exception):
    """The simulated NeuronCore faulted; the message names the instruction and its source line."""
