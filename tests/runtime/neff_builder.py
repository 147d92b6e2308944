"""Test-only writer of `.neff` files and a small builder for test programs."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from contextlib import contextmanager
from math import prod
from typing import Any

import numpy as np
from nkirt import dtypes


def write_neff(
    program: dict[str, Any],
    data_bytes: bytes = b"",
    *,
    major: int = 1,
    magic: bytes = b"NKICNEFF",
    compress: bool = True,
) -> bytes:
    """A `.neff` container per docs/neff-format.md holding `program` (and a DATA section)."""
    payload = json.dumps(program).encode()
    sections = [(b"PROG", 1 if compress else 0, zlib.compress(payload) if compress else payload)]
    if data_bytes:
        sections.append((b"DATA", 0, data_bytes))
    return container(sections, major=major, magic=magic)


def container(sections: list[tuple[bytes, int, bytes]], *, major: int = 1, magic=b"NKICNEFF"):
    """Assemble raw sections (tag, flags, payload) with a correct table and checksum."""
    offset = 48 + 24 * len(sections)
    table = b""
    for tag, flags, payload in sections:
        table += struct.pack("<4sIQQ", tag, flags, offset, len(payload))
        offset += len(payload)
    body = table + b"".join(p for _, _, p in sections)
    digest = hashlib.sha256(body).digest()
    return struct.pack("<8sHHI32s", magic, major, 0, len(sections), digest) + body


def reseal(blob: bytes) -> bytes:
    """Recompute the checksum of an edited container."""
    return blob[:16] + hashlib.sha256(blob[48:]).digest() + blob[48:]


class Kernel:
    """Builds a program JSON: tensors, instructions, loops, with sensible defaults."""

    def __init__(self, target: str = "trn2", name: str = "k"):
        self.target = target
        self.name = name
        self.tensors: list[dict] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.body: list[dict] = []
        self._blocks = [self.body]
        self._next_inst = 0
        self._line = 10
        self.data = b""

    def _tensor(self, name, kind, buffer, dtype, shape, address=None) -> int:
        tid = len(self.tensors)
        tensor = {
            "id": tid,
            "name": name,
            "kind": kind,
            "buffer": buffer,
            "dtype": dtype,
            "shape": list(shape),
        }
        if address is not None:
            tensor["address"] = {"partition": address[0], "byte": address[1]}
        self.tensors.append(tensor)
        return tid

    def input(self, name, dtype, shape) -> int:
        tid = self._tensor(name, "input", "hbm", dtype, shape)
        self.inputs.append(tid)
        return tid

    def output(self, name, dtype, shape) -> int:
        tid = self._tensor(name, "output", "hbm", dtype, shape)
        self.outputs.append(tid)
        return tid

    def constant(self, name, array: np.ndarray) -> int:
        dtype = dtypes.name_of(array.dtype)
        tid = self._tensor(name, "constant", "hbm", dtype, array.shape)
        raw = np.ascontiguousarray(array).tobytes()
        self.tensors[tid].update(data_offset=len(self.data), data_length=len(raw))
        self.data += raw
        return tid

    def sbuf(self, name, dtype, shape, partition=0, byte=0) -> int:
        return self._tensor(name, "internal", "sbuf", dtype, shape, (partition, byte))

    def psum(self, name, dtype, shape, partition=0, byte=0) -> int:
        return self._tensor(name, "internal", "psum", dtype, shape, (partition, byte))

    def ap(self, tid: int, pattern=None, offset: Any = 0, dtype: str | None = None) -> dict:
        """An access pattern; the default walks the whole tensor row-major."""
        if pattern is None:
            shape = self.tensors[tid]["shape"]
            pattern = [[prod(shape[k + 1 :]), n] for k, n in enumerate(shape)]
        ap = {"tensor": tid, "offset": offset, "pattern": [list(p) for p in pattern]}
        if dtype is not None:
            ap["dtype"] = dtype
        return ap

    def inst(self, op, engine, operands, attrs=None, waits=(), queue=None, line=None) -> int:
        iid = self._next_inst
        self._next_inst += 1
        self._line += 1
        line = self._line if line is None else line
        node = {
            "kind": "inst",
            "id": iid,
            "op": op,
            "engine": engine,
            "queue": queue or ("dma0" if engine == "dma" else engine),
            "operands": operands,
            "attrs": attrs or {},
            "waits": [list(w) for w in waits],
            "loc": [0, line, 5, line, 40],
            "stack": [],
        }
        self._blocks[-1].append(node)
        return iid

    def dma(self, dst, src, waits=(), queue="dma0", **attrs) -> int:
        return self.inst("dma_copy", "dma", {"dst": dst, "src": src}, attrs, waits, queue)

    @contextmanager
    def loop(self, var, start, stop, step=1, mode="affine"):
        self._line += 1
        node = {
            "kind": "loop",
            "var": var,
            "start": start,
            "stop": stop,
            "step": step,
            "mode": mode,
            "loc": [0, self._line, 3, self._line, 30],
            "body": [],
        }
        self._blocks[-1].append(node)
        self._blocks.append(node["body"])
        yield var
        self._blocks.pop()

    def program(self) -> dict:
        return {
            "kernel": self.name,
            "target": self.target,
            "files": ["/src/kernels/test_kernel.py"],
            "tensors": self.tensors,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "body": self.body,
            "stats": {"instructions": self._next_inst},
        }

    def neff(self) -> bytes:
        return write_neff(self.program(), self.data)


def read_program(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The program JSON and DATA bytes of a `.neff` (trusted test input; no validation)."""
    count = struct.unpack_from("<I", blob, 12)[0]
    sections = {}
    for i in range(count):
        tag, flags, offset, length = struct.unpack_from("<4sIQQ", blob, 48 + 24 * i)
        payload = blob[offset : offset + length]
        sections[tag] = zlib.decompress(payload) if flags & 1 else payload
    return json.loads(sections[b"PROG"]), sections.get(b"DATA", b"")
