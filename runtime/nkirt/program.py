"""A loaded kernel program: its tensors, parameters and instruction tree (read from a .neff)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from math import prod
from typing import Any

from nkirt import dtypes
from nkirt.limits import DEFAULT, Limits

ON_CHIP = frozenset({"sbuf", "psum"})
#: The in-order instruction streams of a NeuronCore, in trace order.
QUEUES = ("tensor", "vector", "scalar", "gpsimd", *(f"dma{i}" for i in range(16)))


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the program; `.name`, `.dtype` (NKI name) and `.shape` describe an argument."""

    id: int
    name: str
    kind: str
    buffer: str
    dtype: str
    shape: tuple[int, ...]
    #: (start partition, byte offset inside each partition) for SBUF/PSUM tensors.
    address: tuple[int, int] | None = None
    #: Raw bytes of a constant tensor.
    data: bytes | None = None
    #: Multi-buffering of an on-chip tensor allocated in a loop body: (loop variable, slots,
    #: byte stride, phase); execution n of that loop's body uses slot (n + phase) mod slots.
    rotate: tuple[str, int, int, int] | None = None
    #: On a core other than 0 of an LNC launch: the id of core 0's tensor this one is (the
    #: kernel's inputs and outputs and its `shared_hbm` tensors are shared by every core).
    shared: int | None = None
    #: An input that is a view into this (larger) buffer: (view shape, element offset,
    #: element strides). The kernel was written for the view; its accesses address the buffer.
    view: tuple[tuple[int, ...], int, tuple[int, ...]] | None = None
    #: The HBM scratch of a PSUM spill: DMAs to it save spilled tiles, DMAs from it reload them.
    spill: bool = False

    @property
    def on_chip(self) -> bool:
        return self.buffer in ON_CHIP

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.itemsize

    @property
    def partition_bytes(self) -> int:
        """Bytes the tensor occupies in each of its partitions (on-chip tensors)."""
        return prod(self.shape[1:]) * self.itemsize


@dataclass
class Program:
    """A validated `.neff` program. Runs use the form compiled at load (`compiled`); the JSON
    node tree it was compiled from (`body`) is not kept, only the program's JSON text, which
    `body` parses again when asked (the tree of a large program takes many times the memory
    of its text, and a run never reads it)."""

    kernel: str
    target: str
    files: list[str]
    tensors: dict[int, TensorInfo]
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    #: Result name of each entry of `outputs` (the returned variable's name, else outN).
    output_names: list[str]
    #: The program's JSON text (its PROG or CORn section), validated.
    text: str = field(repr=False)
    stats: dict[str, Any] = field(default_factory=dict)
    #: What a run of this program may use (given when it was loaded).
    limits: Limits = DEFAULT
    #: The physical core this program runs on, and the launch's core count (LNC degree).
    core: int = 0
    lnc: int = 1
    #: The programs of cores 1.. of the launch (on core 0's program only).
    peers: list[Program] = field(default_factory=list)
    #: Per entry of `outputs`: the view of it the kernel returned (view shape, element offset,
    #: element strides), or None for the whole tensor.
    output_views: list[tuple | None] = field(default_factory=list)
    #: The loop-name tuples of unrolled iterations that instructions' "unrolled" index.
    unrolled_names: list[tuple[str, ...]] = field(default_factory=list)
    #: The instruction tree compiled when the program was loaded (`executor.compile_program`,
    #: with the instruction semantics when they load); every run takes a `fresh_copy` of it.
    compiled: tuple | None = field(default=None, repr=False, compare=False)

    #: Instruction instances one run issues (each instruction × its loops' trip counts), and
    #: whether the program has a dynamic loop: both counted at load (`count_instances`).
    instance_count: int = 0
    has_dynamic_loops: bool = False

    @property
    def body(self) -> list[dict[str, Any]]:
        """The program's instruction tree as JSON nodes (parsed again on every call)."""
        return json.loads(self.text)["body"]

    def where(self, loc) -> str:
        """`file:line` of a `loc` list `[file_index, line, col, end_line, end_col]`."""
        return f"{self.files[loc[0]]}:{loc[1]}"

    def short_where(self, loc) -> str:
        """`basename:line` of a `loc`, for compact trace and summary labels."""
        return f"{os.path.basename(self.files[loc[0]])}:{loc[1]}"


def count_instances(body: list[dict[str, Any]]) -> tuple[int, bool]:
    """(instruction instances one run of `body` issues: each instruction × its loops' trip
    counts, a dynamic loop counted once; whether it has a dynamic loop)."""
    dynamic = False

    def count(nodes: list[dict[str, Any]], trips: int) -> int:
        nonlocal dynamic
        total = 0
        for node in nodes:
            if node["kind"] == "loop":
                trip = len(range(node["start"], node["stop"], node["step"]))
                total += count(node["body"], trips * trip)
            elif node["kind"] == "dynloop":  # one iteration (its trip count is data)
                dynamic = True
                total += count(node["body"], trips)
            else:
                total += trips
        return total

    return count(body, 1), dynamic
