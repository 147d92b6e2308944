"""Reusable temporaries for the semantics of the instruction being executed.

An element-wise instruction computes in fp32 temporaries (the engines' input cast, the ALU
result, the cast to the destination dtype) that live only until the executor has copied the
result into the simulated memory. Allocating them afresh for every instance makes the process
map and unmap pages over and over (glibc hands arrays of a few hundred KiB and more straight to
the operating system): for an element-wise kernel that page-fault churn cost more than the
arithmetic. `Scratch` keeps one byte buffer per slot instead (the n-th temporary an instruction
asks for gets slot n) and hands out views of it, so the next instance reuses pages already
mapped. The values are the same: numpy's casts and ufuncs write the same bits into a given
array as into a fresh one.

Only the executor's main call of an instruction's semantics runs with the scratch active
(`begin`/`end`), and it consumes the returned arrays before the next call: everywhere else
(a second evaluation of the same instruction, row-by-row DMA, tests of the semantics) `empty`
allocates a fresh array.
"""

from __future__ import annotations

import math

import numpy as np


class Scratch:
    """Temporaries of one executor, by slot."""

    #: a temporary larger than this is allocated afresh (bounds what the slots keep mapped)
    LIMIT = 16 << 20

    def __init__(self) -> None:
        self.buffers: list[np.ndarray] = []
        self.used = 0
        self.active = False

    def begin(self) -> None:
        """An instruction's semantics start: every slot is free again."""
        self.used = 0
        self.active = True

    def end(self) -> None:
        self.active = False

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An array of unspecified contents, valid until the next `begin`."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if not self.active or nbytes > self.LIMIT:
            return np.empty(shape, dtype)
        slot = self.used
        self.used += 1
        if slot == len(self.buffers):
            self.buffers.append(np.empty(nbytes, np.uint8))
        elif self.buffers[slot].size < nbytes:
            self.buffers[slot] = np.empty(nbytes, np.uint8)
        return self.buffers[slot][:nbytes].view(dtype).reshape(shape)

    def release(self) -> None:
        """Drop the buffers (the run is over)."""
        self.buffers = []

    def owns(self, array: np.ndarray) -> bool:
        """Whether `array` is one of the temporaries handed out, whole and contiguous (not a
        broadcast or strided view of one), so that its caller may overwrite it."""
        base = array.base
        return (
            base is not None
            and array.flags.c_contiguous
            and any(base is buffer for buffer in self.buffers)
        )

    def astype(self, array: np.ndarray, dtype) -> np.ndarray:
        """`array.astype(dtype)` (the same cast, so the same bits) into a temporary."""
        out = self.empty(array.shape, dtype)
        np.copyto(out, array, casting="unsafe")
        return out


#: the scratch of code that runs outside an executor: always allocates afresh
FRESH = Scratch()
