"""Writes the `.neff` container exactly as docs/neff-format.md specifies (format 1.2)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import zlib

from ..ir.affine import Affine
from ..ir.core import AccessPattern, DynLoop, Kernel, Loc, Loop, Op, Tensor
from ..passes.base import without_gc
from .schedule import Clamped, Schedule, Skip, schedule_once

MAGIC = b"NKICNEFF"
MAJOR, MINOR = 1, 2
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


def _dumps(value) -> str:
    """`value` as the PROG section writes JSON: compact, UTF-8 text rather than escapes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, check_circular=False)


#: Stands for the encoded body in the text of a document (`_ProgramWriter.text`); no name or
#: path holds a NUL character.
_BODY = "\x00body\x00"
_BODY_TEXT = _dumps(_BODY)


def _splice(doc: dict, body: str) -> str:
    """The text of `doc`, whose "body" is `_BODY`, with the encoded nodes `body` in its place."""
    head, mark, tail = _dumps(doc).partition(_BODY_TEXT)
    assert mark and _BODY_TEXT not in tail
    return f"{head}[{body}]{tail}"


class _ProgramWriter:
    """Builds the PROG JSON document and the DATA bytes of one scheduled kernel.

    `program` gives the document as JSON values; `text` gives its encoded form directly, the
    same characters `_dumps(program())` would give: an unrolled kernel has a hundred thousand
    instructions, whose repeated parts (strings, patterns, source locations) are encoded
    once, at a third of the cost of building and encoding the values."""

    def __init__(self, sched: Schedule):
        self.sched = sched
        self.kernel = sched.kernel
        self.files: dict[str, int] = {f: i for i, f in enumerate(self.kernel.files())}
        self.tensor_ids: dict[Tensor, int] = {}
        self.data = bytearray()
        self.loops = 0
        # encoded forms of strings, patterns and source locations, by value
        self._strings: dict[str, str] = {}
        self._patterns: dict[tuple, str] = {}
        self._locs: dict[tuple, str] = {}
        self._iterations: dict[tuple, str] = {}
        #: the loop-name tuples of the unrolled iterations, numbered as first met in program
        #: order (the program's "unrolled_names"; an instruction's "unrolled" starts with one)
        self.unrolled_names: dict[tuple[str, ...], int] = {}

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

    def _loop(self, op: Loop, body) -> dict:
        """The node of a loop; `body()` gives the value of its "body"."""
        self.loops += 1
        if isinstance(op, DynLoop):
            out = {
                "kind": "dynloop",
                "loop": op.kind,
                "var": op.var,
                "name": op.counter.label if op.counter is not None else "iteration",
                "loc": self.loc(op.loc),
                "body": body(),
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
        return {
            "kind": "loop",
            "var": op.var,
            "name": op.source_name,
            "start": op.start,
            "stop": op.stop,
            "step": op.step,
            "mode": op.mode,
            "loc": self.loc(op.loc),
            "body": body(),
        }

    def node(self, op: Op) -> dict | None:
        if isinstance(op, Loop):
            return self._loop(
                op, lambda: [n for n in (self.node(o) for o in op.body) if n is not None]
            )
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
        if op.iteration:
            node["unrolled"] = self.unrolled(op.iteration)
        if s.queues > 1:
            node["queues"] = s.queues
            node["stride"] = s.stride if s.steps is None else self.offset(s.steps)
        return node

    # -- the encoded form, part by part as `node` builds the values --------------------------

    def _string(self, text: str) -> str:
        found = self._strings.get(text)
        if found is None:
            found = self._strings[text] = _dumps(text)
        return found

    def _value(self, v) -> str:
        t = type(v)
        if t is int:
            return int.__repr__(v)
        if t is str:
            return self._string(v)
        if v is None:
            return "null"
        if t is bool:
            return "true" if v else "false"
        if t is float and math.isfinite(v):
            return float.__repr__(v)
        if t is list and all(type(x) is int for x in v):
            return f"[{','.join(map(int.__repr__, v))}]"
        return _dumps(v)

    def _loc_text(self, loc: Loc) -> str:
        key = (loc.file, loc.line, loc.col, loc.end_line, loc.end_col)
        found = self._locs.get(key)
        if found is None:
            found = self._locs[key] = _dumps(self.loc(loc))
        return found

    def unrolled(self, iteration: tuple[tuple[str, int], ...]) -> list[int]:
        """An instruction's "unrolled": the number of its loop-name tuple, then the values."""
        names = tuple(name for name, _ in iteration)
        number = self.unrolled_names.setdefault(names, len(self.unrolled_names))
        return [number, *(value for _, value in iteration)]

    def _iteration_text(self, iteration: tuple[tuple[str, int], ...]) -> str:
        """`,"unrolled":[number,value,...]`; the instructions of one unrolled iteration share
        their tuple, so it is encoded once per iteration."""
        found = self._iterations.get(iteration)
        if found is None:
            values = ",".join(map(int.__repr__, self.unrolled(iteration)))
            found = self._iterations[iteration] = f',"unrolled":[{values}]'
        return found

    def _ap_text(self, ap: AccessPattern) -> str:
        if ap.dynamic is not None:
            return _dumps(self.ap(ap))
        offset = ap.offset
        pattern = self._patterns.get(ap.pattern)
        if pattern is None:
            pattern = self._patterns[ap.pattern] = _dumps([[s, n] for s, n in ap.pattern])
        return (
            f'{{"tensor":{self.tensor_ids[ap.tensor]},"offset":'
            f"{int.__repr__(offset.const) if not offset.terms else _dumps(self.offset(offset))}"
            f',"pattern":{pattern},"dtype":{self._string(ap.dtype)}}}'
        )

    def node_text(self, op: Op) -> str | None:
        """`_dumps(self.node(op))`, encoded part by part."""
        if isinstance(op, Loop):
            return _splice(self._loop(op, lambda: _BODY), self.body_text(op.body))
        s = self.sched.by_inst.get(op)
        if s is None:
            return None
        string, value = self._string, self._value
        operands = []
        for name, o in op.operands.items():
            if isinstance(o, AccessPattern):
                operands.append(f"{string(name)}:{self._ap_text(o)}")
            elif o.value is not None:
                operands.append(f'{string(name)}:{{"imm":{value(o.value)}}}')
        attrs = []
        for k, v in op.attrs.items():
            if k == "accumulate" and isinstance(v, tuple):
                attrs.append(f'"accumulate":{{"unless_first":{_dumps(list(v))}}}')
                continue
            if type(v) is tuple:
                v = _json_value(v)
            attrs.append(f"{string(k)}:{value(v)}")
        if op.opcode in ("nc_matmul", "nc_matmul_mx") and "accumulate" not in op.attrs:
            attrs.append('"accumulate":false')
        waits = ",".join(
            f"[{pid},{skip}]" if type(skip) is int else _dumps([pid, _skip(skip)])
            for pid, skip in s.waits
        )
        loc = self._loc_text(op.loc)
        stack_text = "[" + ",".join([self._loc_text(f) for f in op.loc.stack]) + "]"
        text = (
            f'{{"kind":"inst","id":{s.id},"op":{string(op.opcode)},"engine":{string(s.engine)}'
            f',"queue":{string(s.queue)},"operands":{{{",".join(operands)}}},"attrs":{{'
            + ",".join(attrs)
            + f'}},"waits":[{waits}],"loc":{loc},"stack":{stack_text}'
        )
        if op.iteration:
            text += self._iteration_text(op.iteration)
        if s.queues > 1:
            stride = s.stride if s.steps is None else self.offset(s.steps)
            text += f',"queues":{value(s.queues)},"stride":{value(stride)}'
        return text + "}"

    def body_text(self, ops: list[Op]) -> str:
        """The encoded nodes of `ops`, separated by commas."""
        return ",".join(t for t in (self.node_text(op) for op in ops) if t is not None)

    def program(self) -> dict:
        """The PROG document as JSON values."""
        tensors = [self.tensor(t) for t in self.kernel.tensors()]
        body = [n for n in (self.node(op) for op in self.kernel.body) if n is not None]
        return self._document(tensors, body)

    def text(self) -> tuple[dict, str]:
        """The PROG document with `_BODY` for its body, and the encoded body: `_splice` of
        the two is the characters `_dumps(program())` gives."""
        tensors = [self.tensor(t) for t in self.kernel.tensors()]
        body = self.body_text(self.kernel.body)
        return self._document(tensors, _BODY), body

    def _document(self, tensors: list[dict], body) -> dict:
        k = self.kernel
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
            # the body is encoded first: its instructions number these as they meet them
            **(
                {"unrolled_names": [list(names) for names in self.unrolled_names]}
                if self.unrolled_names
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
        doc, body = w.text()
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
        text = _splice(doc, body).encode("utf-8")
        tags = (b"PROG", b"DATA") if n == 0 else (b"COR%d" % n, b"DAT%d" % n)
        sections.append((tags[0], COMPRESSED, zlib.compress(text, 6)))
        if w.data:
            sections.append((tags[1], 0, bytes(w.data)))
    return pack_neff(sections)
