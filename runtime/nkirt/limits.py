"""Resource limits of a run, checked before anything is allocated or executed.

A `.neff` may come from anywhere: the loader refuses programs whose declared sizes exceed
these limits instead of allocating terabytes or looping for ever. `max_memory` and
`max_instances` can be raised by the user (`nkic run --max-memory`, `--max-instances`;
`nkirt.load(..., limits=Limits(...))`); the others are fixed by the container format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Largest `.neff` file read, and largest inflated PROG or DATA section.
MAX_FILE_BYTES = 1 << 30
MAX_SECTION_BYTES = 1 << 30
#: Largest integer anywhere in the program JSON (shapes, offsets, steps, trip counts).
MAX_INT = 1 << 53
#: Largest tensor rank, and number of tensors, instructions, loops, files.
MAX_RANK = 16
MAX_ENTRIES = 1 << 20
#: Deepest loop nest and JSON nesting.
MAX_DEPTH = 64
#: Longest name (tensor, kernel, loop variable, file).
MAX_NAME = 4096


@dataclass(frozen=True)
class Limits:
    """What one run may use; the defaults suit any kernel that fits a NeuronCore's HBM."""

    #: Bytes of host memory the simulated HBM tensors, SBUF, PSUM and their shadows may take.
    max_memory: int = 8 << 30
    #: Instruction instances one run may issue (each instruction × its loops' trip counts).
    max_instances: int = 1 << 28


DEFAULT = Limits()

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`'8G'`, `'512MiB'`, `'1000000'` -> bytes; ValueError for anything else."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"expected a size such as 8G, 512M or 1048576, got {text!r}")
    value = float(match[1]) * _UNITS[match[2].upper()]
    if value < 1:
        raise ValueError(f"size must be positive, got {text!r}")
    return int(value)


def format_size(n: int | float) -> str:
    """Bytes in the largest binary unit that keeps one digit before the point."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"
