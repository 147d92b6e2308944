"""Writes the `.neff` container exactly as docs/neff-format.md specifies (format 1.1)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib

from ..ir.affine import Affine
from ..ir.core import AccessPattern, DynLoop, Kernel, Loc, Loop, Op, Tensor
from ..passes.base import without_gc
from .schedule import Clamped, Schedule, Skip, schedule_once

MAGIC = b"NKICNEFF"
MAJOR, MINOR = 1, 1
HEADER = struct.Struct("<8sHHI32s")
SECTION = struct.Struct("<4sIQQ")
COMPRESSED = 1


def _json_value(v):
    if isinstance(v, tuple | list):
        return [_json_value(x) for x in v]
    return v


def portable_paths(files: list[str]) -> list[str]:
    """Source paths relative to the deepest directory holding them all (a single file keeps
    only its name), so that a `.neff` does not depend on where the sources were checked out:
    the same kernel compiled in two checkouts gives the same bytes."""
    real = [f for f in files if os.path.isabs(f)]
    if not real:
        return files
    base = os.path.commonpath([os.path.dirname(f) for f in real])
    return [os.path.relpath(f, base) if os.path.isabs(f) else f for f in files]


def _skip(skip: Skip) -> int | dict:
    """A wait's skip as docs/neff-format.md `waits` has it."""
    if type(skip) is int:
        return skip
    if isinstance(skip, Clamped):
        out = _ProgramWriter.offset(skip.expr)
        if isinstance(out, int):
            return max(0, out)
        return {**out, "clamp": True}
    return _ProgramWriter.offset(Affine.of(skip))


class _ProgramWriter:
    """Builds the PROG JSON document and the DATA bytes of one scheduled kernel."""

    def __init__(self, sched: Schedule):
        self.sched = sched
        self.kernel = sched.kernel
        self.files: dict[str, int] = {f: i for i, f in enumerate(self.kernel.files())}
        self.tensor_ids: dict[Tensor, int] = {}
        self.data = bytearray()
        self.loops = 0

    def file(self, name: str) -> int:
        return self.files.setdefault(name, len(self.files))

    def loc(self, loc: Loc) -> list[int]:
        return [self.file(loc.file), loc.line, loc.col, loc.end_line, loc.end_col]

    def tensor(self, t: Tensor) -> dict:
        tid = self.tensor_ids.setdefault(t, len(self.tensor_ids))
        out: dict = {
            "id": tid,
            "name": t.label or t.name,
            "kind": t.kind,
            "buffer": t.buffer,
            "dtype": t.dtype,
            "shape": list(t.shape),
        }
        if t.spill:
            out["spill"] = True
        if t.on_chip:
            out["address"] = {"partition": t.address[0], "byte": t.address[1]}
            if t.rotate is not None:
                var, count, stride, phase = t.rotate
                out["rotate"] = {"var": var, "count": count, "stride": stride}
                if phase:
                    out["rotate"]["phase"] = phase
        if t.view_shape is not None:
            v = t.view
            out["view"] = {
                "shape": list(t.view_shape),
                "offset": v.offset,
                "strides": list(v.strides),
            }
        if t.kind == "constant":
            raw = bytes(t.data)
            out["data_offset"] = len(self.data)
            out["data_length"] = len(raw)
            self.data += raw
        return out

    @staticmethod
    def offset(a: Affine) -> int | dict:
        if a.is_const:
            return a.const
        return {"c": a.const, "t": dict(a.terms)}

    def ap(self, ap: AccessPattern) -> dict:
        out = {
            "tensor": self.tensor_ids[ap.tensor],
            "offset": self.offset(ap.offset),
            "pattern": [[s, n] for s, n in ap.pattern],
            "dtype": ap.dtype,
        }
        if ap.dynamic is not None:
            d = ap.dynamic
            out["dynamic"] = {"kind": d.kind, "index": d.index, "dim": d.dim}
            if d.unit is not None:
                out["dynamic"]["unit"] = d.unit
            if d.extent is not None:
                out["dynamic"]["extent"] = d.extent
        return out

    def attrs(self, attrs: dict) -> dict:
        out = {}
        for k, v in attrs.items():
            if k == "accumulate" and isinstance(v, tuple):
                out[k] = {"unless_first": list(v)}
            else:
                out[k] = _json_value(v)
        return out

    def bound(self, v) -> dict:
        return {"reg": self.tensor_ids[v]} if isinstance(v, Tensor) else {"imm": v}

    def node(self, op: Op) -> dict | None:
        if isinstance(op, DynLoop):
            self.loops += 1
            out = {
                "kind": "dynloop",
                "loop": op.kind,
                "var": op.var,
                "name": op.counter.label if op.counter is not None else "iteration",
                "loc": self.loc(op.loc),
                "body": [n for n in (self.node(o) for o in op.body) if n is not None],
            }
            if op.kind == "for":
                out["start"] = self.bound(op.bound_start)
                out["stop"] = self.bound(op.bound_stop)
                out["step"] = op.bound_step
                if op.counter is not None:
                    out["counter"] = self.tensor_ids[op.counter]
            else:
                out["cond"] = self.tensor_ids[op.cond]
            return out
        if isinstance(op, Loop):
            self.loops += 1
            return {
                "kind": "loop",
                "var": op.var,
                "name": op.source_name,
                "start": op.start,
                "stop": op.stop,
                "step": op.step,
                "mode": op.mode,
                "loc": self.loc(op.loc),
                "body": [n for n in (self.node(o) for o in op.body) if n is not None],
            }
        s = self.sched.by_inst.get(op)
        if s is None:
            return None  # Alloc: tensors are listed up front
        operands = {}
        for name, o in op.operands.items():
            if isinstance(o, AccessPattern):
                operands[name] = self.ap(o)
            elif o.value is not None:
                operands[name] = {"imm": o.value}
        attrs = self.attrs(op.attrs)
        if op.opcode in ("nc_matmul", "nc_matmul_mx"):
            attrs.setdefault("accumulate", False)
        node = {
            "kind": "inst",
            "id": s.id,
            "op": op.opcode,
            "engine": s.engine,
            "queue": s.queue,
            "operands": operands,
            "attrs": attrs,
            "waits": [[pid, _skip(skip)] for pid, skip in s.waits],
            "loc": self.loc(op.loc),
            "stack": [self.loc(f) for f in op.loc.stack],
        }
        if s.queues > 1:
            node["queues"] = s.queues
            node["stride"] = s.stride if s.steps is None else self.offset(s.steps)
        return node

    def program(self) -> dict:
        k = self.kernel
        tensors = [self.tensor(t) for t in k.tensors()]
        body = [n for n in (self.node(op) for op in k.body) if n is not None]
        return {
            "kernel": k.name,
            "target": k.target,
            "files": portable_paths(list(self.files)),
            "tensors": tensors,
            "inputs": [self.tensor_ids[t] for t in k.params],
            "outputs": [self.tensor_ids[t] for t in k.returns],
            **(
                {"output_views": [_view_json(v) for v in k.return_views]}
                if any(k.return_views)
                else {}
            ),
            "body": body,
            "stats": {
                "instructions": len(self.sched.insts),
                "loops": self.loops,
                "waits": sum(len(s.waits) for s in self.sched.insts),
            },
        }


def _view_json(view: tuple | None) -> dict | None:
    if view is None:
        return None
    shape, offset, strides = view
    return {"shape": list(shape), "offset": offset, "strides": list(strides)}


def pack_neff(sections: list[tuple[bytes, int, bytes]]) -> bytes:
    """Header + section table + payloads for (tag, flags, payload) sections."""
    offset = HEADER.size + SECTION.size * len(sections)
    table = b""
    for tag, flags, payload in sections:
        table += SECTION.pack(tag, flags, offset, len(payload))
        offset += len(payload)
    rest = table + b"".join(p for _, _, p in sections)
    digest = hashlib.sha256(rest).digest()
    return HEADER.pack(MAGIC, MAJOR, MINOR, len(sections), digest) + rest


@without_gc
def write_neff(kernel: Kernel, peers: list[Kernel] | tuple[Kernel, ...] = ()) -> bytes:
    """Serialise an allocated kernel to `.neff` bytes (deterministic). `peers` are the
    programs of the other physical cores of an LNC launch (sections COR1, DAT1, ...): their
    tensors that every core shares name the core-0 tensor they are (`"shared"`).

    Raises ValueError if an on-chip tensor has no address (the kernel was not allocated).
    """
    from ..passes.checks.cross_core import shared_tensors

    sections = []
    first: dict[tuple, int] = {}
    for n, k in enumerate((kernel, *peers)):
        unplaced = [t.name for t in k.tensors() if t.on_chip and t.address is None]
        if unplaced:
            raise ValueError(
                "write_neff needs an allocated kernel; no address: %" + ", %".join(unplaced)
            )
        w = _ProgramWriter(schedule_once(k))
        doc = w.program()
        if peers:
            doc["core"] = n
            doc["lnc"] = len(peers) + 1
            shared = shared_tensors(k)
            for key, t in shared.items():
                if n == 0:
                    first[key] = w.tensor_ids[t]
                elif key in first:
                    doc["tensors"][w.tensor_ids[t]]["shared"] = first[key]
        # no cycle check: the document is a tree built here (the check costs a tenth of the dump)
        text = json.dumps(
            doc, separators=(",", ":"), ensure_ascii=False, check_circular=False
        ).encode("utf-8")
        tags = (b"PROG", b"DATA") if n == 0 else (b"COR%d" % n, b"DAT%d" % n)
        sections.append((tags[0], COMPRESSED, zlib.compress(text, 6)))
        if w.data:
            sections.append((tags[1], 0, bytes(w.data)))
    return pack_neff(sections)
