"""Which writes of the cores of an LNC launch store the same values: value numbering across
the launch's programs.

Two cores that write the same bytes of a shared tensor, unordered, leave a value that depends
on timing, unless both store the same values there: the same instruction pattern applied to the
same data (every core zeroing an output before accumulating into it, every core storing a
projection that both computed, one half each, and exchanged). This module gives each write a
*value number*: equal numbers on two cores mean equal bytes, whatever the timing.

Each core's program is walked in program order. A value is a term built from the
instruction (opcode, engine, attributes, immediates), the canonical access patterns of its
operands and the values it reads; each tensor has a history (the chain of writes to it since
its allocation), and a read is the history it reads and the pattern it reads with, or simply the
value of the last write when that wrote exactly the pattern being read (or the part of it being
read, when it wrote every element of a box holding them). Terms are interned, so
equal terms get equal numbers. What may differ between the cores gets a number of its own on
each core:

* a read of a shared tensor (an input, an output or `nl.shared_hbm`) that some core writes:
  its bytes depend on the other core's progress;
* the state a loop carries from one iteration to the next (tensors written in its body);
  a Python `range` loop that nkic kept as one loop (`Loop.python`) is walked unrolled instead,
  as the language runs it, so that its iterations are numbered exactly as unrolled code;
* random numbers, and a reduction that continues the accumulator of an earlier instruction;
* what a collective other than `all_reduce` / `all_gather` delivers.

The cores meet at their cross-core instructions in the same order (checked before), so the
walk runs them in lock step: a `sendrecv` gives each core's destination the value of the other
core's source. The sum of two values is one value whichever comes first (`tensor_tensor` with
a commutative operator sorts its operands), so `own + received` on one core equals
`received + own` on the other. Reads of on-chip memory that nothing wrote are not told apart
across the cores: those are reported by their own check (`err_read_before_write`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

from ...ir.core import AccessPattern, Alloc, DynLoop, Imm, Inst, Kernel, Loop, Op, Tensor
from ...ir.isa import COLLECTIVES, CROSS_CORE
from .accesses import _writes as is_write
from .regions import footprint

#: `tensor_tensor` operators whose operands may be swapped without changing a bit.
COMMUTATIVE = frozenset(
    {"add", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"}
)
#: Instructions whose result is not a function of their operands.
RANDOM = frozenset({"rng", "rand2", "dropout", "rand_get_state"})
#: Collectives that deliver the same values to every core (the rest: each core its part).
SYMMETRIC = {"all_reduce": True, "all_gather": False}  # opcode: operands commute
#: reduce_cmd values whose result depends only on the instruction itself.
FRESH_REDUCE = frozenset({"idle", "reset_reduce", "reset"})

#: A write's key: (instruction uid, operand name).
WriteKey = tuple[int, str]


class SameValues:
    """Value numbers of the writes of every core of one launch.

    `same(i, a, j, b)`: whether write access `a` of core `i` and `b` of core `j` store the same
    values at the same places (same value number, same canonical destination pattern), in
    every execution of the instruction (one per iteration of the `range` loops around it)."""

    def __init__(self, kernels: list[Kernel], shared: list[dict[int, tuple]]):
        self._ids: dict[tuple, int] = {}
        self._fresh = itertools.count()
        self._kernels = kernels
        self._shared = shared  # per core: id(tensor) -> cross-core key
        self._written_shared = {
            shared[c][id(ap.tensor)]
            for c, k in enumerate(kernels)
            for op in k.instructions()
            if op.opcode != "core_barrier"
            for name, ap in op.aps()
            if is_write(op.opcode, name) and id(ap.tensor) in shared[c]
        }
        self.writes: list[dict[WriteKey, list[tuple]]] = [{} for _ in kernels]
        self._hist: list[dict[int, int]] = [{} for _ in kernels]
        self._last: dict[int, tuple] = {}  # history node -> (pattern, value) of its last write
        self._vars: list[dict[str, int]] = [{} for _ in kernels]
        self.complete = self._run()

    # ---- terms --------------------------------------------------------------------------

    def _term(self, *node) -> int:
        return self._ids.setdefault(node, len(self._ids))

    def _opaque(self, core: int) -> int:
        """A value of this core alone."""
        return self._term("opaque", core, next(self._fresh))

    def _canon(self, core: int, ap: AccessPattern) -> tuple:
        """The pattern with loop variables named by their loop's place in the program (the
        cores run the same loops, checked before)."""
        names = self._vars[core]
        terms = tuple((names.get(v, v), c) for v, c in ap.offset.terms)
        dyn = str(ap.dynamic) if ap.dynamic is not None else None
        return (ap.offset.const, terms, ap.pattern, ap.dtype, dyn)

    def _canon_attr(self, core: int, v):
        """An attribute with the loop variables it names (`accumulate` over a loop) named by
        their loop's place in the program: the cores may number their loops differently."""
        if isinstance(v, str):
            place = self._vars[core].get(v)
            return v if place is None else ("loop", place)
        if isinstance(v, tuple):
            return tuple(self._canon_attr(core, x) for x in v)
        return v

    def _initial(self, t: Tensor) -> int:
        if t.kind == "constant":
            return self._term("constant", t.dtype, t.shape, hash(t.data))
        return self._term("init", t.buffer, t.dtype, t.shape)

    def _read(self, core: int, ap: AccessPattern) -> int:
        t = ap.tensor
        canon = self._canon(core, ap)
        key = self._shared[core].get(id(t))
        if key is not None:
            if key in self._written_shared:
                return self._opaque(core)
            return self._term("input", key, canon)
        hist = self._hist[core].get(id(t))
        if hist is None:
            hist = self._initial(t)
        last = self._last.get(hist)
        if last is not None:
            if last[0] == canon:
                return last[1]
            # the last write covers every element read: what it wrote there, whatever came before
            if last[2] is not None and _within(_hull(ap), last[2]):
                return self._term("part", last[1], last[0], canon)
        return self._term("read", hist, canon)

    def _write(self, core: int, inst: Inst, name: str, ap: AccessPattern, value: int) -> None:
        canon = self._canon(core, ap)
        self.writes[core].setdefault((inst.uid, name), []).append((canon, value))
        t = ap.tensor
        if id(t) in self._shared[core]:
            return  # reads of a written shared tensor are the core's own anyway
        prev = self._hist[core].get(id(t))
        node = self._term("write", prev if prev is not None else self._initial(t), canon, value)
        self._last[node] = (canon, value, _box(ap))
        self._hist[core][id(t)] = node

    # ---- one instruction ----------------------------------------------------------------

    def _value(self, core: int, inst: Inst, env: dict[str, int]) -> int:
        if inst.opcode in RANDOM:
            return self._opaque(core)
        if inst.attrs.get("reduce_cmd", "idle") not in FRESH_REDUCE:
            return self._opaque(core)  # continues an accumulator an earlier instruction left
        reads = []
        for name, ap in _bound(inst.aps(), env):
            if not is_write(inst.opcode, name):
                reads.append((name, self._canon(core, ap), self._read(core, ap)))
            elif _keeps_destination(inst):
                reads.append(("old " + name, self._canon(core, ap), self._read(core, ap)))
        if inst.opcode == "tensor_tensor" and inst.attrs.get("op") in COMMUTATIVE:
            sides = sorted(r[1:] for r in reads if r[0] in ("data1", "data2"))
            rest = [r for r in reads if r[0] not in ("data1", "data2")]
            reads = rest + [("operand", *s) for s in sides]
        imms = tuple(
            sorted((n, repr(o.value)) for n, o in inst.operands.items() if isinstance(o, Imm))
        )
        attrs = tuple(sorted((k, repr(self._canon_attr(core, v))) for k, v in inst.attrs.items()))
        return self._term("inst", inst.opcode, inst.engine, attrs, imms, tuple(reads))

    def _outputs(self, inst: Inst, env: dict[str, int]) -> list[tuple[str, AccessPattern]]:
        if inst.opcode == "core_barrier":
            return []  # orders its tensor, writes nothing
        return [(n, ap) for n, ap in _bound(inst.aps(), env) if is_write(inst.opcode, n)]

    # ---- the walk -----------------------------------------------------------------------

    def _walk(self, core: int) -> Iterator[tuple[Inst, list[int]]]:
        """Value-number core `core`'s program; yields at each cross-core instruction with the
        values of its sources and expects the values of its destinations back."""
        kernel = self._kernels[core]
        carried = _written_in_loops(kernel)
        names = self._vars[core]
        for op, env in _unrolled(kernel.body, {}):
            for var in env:
                if var not in names:  # an unrolled loop's first iteration
                    names[var] = len(names)
            if isinstance(op, Loop):
                self._vars[core][op.var] = len(self._vars[core])
                # what one iteration leaves for the next: this core's own
                for t in carried[id(op)]:
                    if id(t) not in self._shared[core]:
                        self._hist[core][id(t)] = self._opaque(core)
                if isinstance(op, DynLoop):
                    for r in op.registers():
                        self._hist[core][id(r)] = self._opaque(core)
            elif isinstance(op, Alloc):
                self._hist[core].pop(id(op.result), None)
            elif isinstance(op, Inst):
                outputs = self._outputs(op, env)
                if op.opcode in CROSS_CORE:
                    sources = [
                        self._read(core, ap)
                        for n, ap in _bound(op.aps(), env)
                        if not is_write(op.opcode, n)
                    ]
                    values = yield op, sources
                    for (name, ap), value in zip(outputs, values):
                        self._write(core, op, name, ap, value)
                    continue
                value = self._value(core, op, env)
                for name, ap in outputs:
                    self._write(core, op, name, ap, self._term("output", value, name))

    def _run(self) -> bool:
        """Walk every core in lock step; False if their meetings do not pair up."""
        walks = [self._walk(c) for c in range(len(self._kernels))]
        pending = [next(w, None) for w in walks]
        while any(p is not None for p in pending):
            if any(p is None for p in pending):
                return False
            opcodes = {p[0].opcode for p in pending}
            if len(opcodes) != 1:
                return False
            results = self._meet([p[0] for p in pending], [p[1] for p in pending])
            pending = [_send(w, r) for w, r in zip(walks, results)]
        return True

    def _meet(self, insts: list[Inst], sources: list[list[int]]) -> list[list[int]]:
        """The values each core's destinations receive at one meeting."""
        n = len(insts)
        opcode = insts[0].opcode
        outs = [len(self._outputs(i, {})) for i in insts]
        if opcode == "sendrecv":
            out = []
            for c, inst in enumerate(insts):
                peer = inst.attrs.get("recv_from_rank")
                ok = isinstance(peer, int) and 0 <= peer < n and sources[peer]
                out.append([sources[peer][0] if ok else self._opaque(c)] * outs[c])
            return out
        if opcode in COLLECTIVES and opcode in SYMMETRIC:
            attrs = {tuple(sorted((k, repr(v)) for k, v in i.attrs.items())) for i in insts}
            if len(attrs) == 1:
                srcs = [tuple(s) for s in sources]
                if SYMMETRIC[opcode]:
                    srcs.sort()
                value = self._term("collective", opcode, attrs.pop(), tuple(srcs))
                return [[value] * k for k in outs]
        return [[self._opaque(c)] * k for c, k in enumerate(outs)]

    def same(self, i: int, a: tuple[int, str], j: int, b: tuple[int, str]) -> bool:
        if not self.complete:
            return False
        x, y = self.writes[i].get(a), self.writes[j].get(b)
        return x is not None and x == y


def _unrolled(ops: list[Op], env: dict[str, int]) -> Iterator[tuple[Op, dict[str, int]]]:
    """Every op in program order with the values of the enclosing `range` loops nkic kept as
    one loop (`Loop.python`), which are walked once per iteration; other loops are yielded
    (their variables stay symbolic) and walked once."""
    for op in ops:
        if isinstance(op, Loop) and op.python and not isinstance(op, DynLoop):
            for i in range(op.trip_count):
                yield from _unrolled(op.body, {**env, op.var: op.start + i * op.step})
            continue
        yield op, env
        if isinstance(op, Loop):
            yield from _unrolled(op.body, env)


def _bound(aps, env: dict[str, int]):
    """(name, pattern) with the variables of unrolled loops replaced by their values."""
    if not env:
        yield from aps
        return
    for name, ap in aps:
        if any(v in env for v, _ in ap.offset.terms):
            ap = dataclasses.replace(ap, offset=ap.offset.substitute(env))
        yield name, ap


def _hull(ap: AccessPattern) -> list[tuple[int, int]] | None:
    """The element box (per dimension, inclusive) around a loop-free static access."""
    if ap.offset.terms or ap.dynamic is not None:
        return None
    f = footprint(ap, {})
    if f.kind != "elements":
        return None
    return f.intervals({})


def _box(ap: AccessPattern) -> list[tuple[int, int]] | None:
    """The access's element box when it touches every element of it (a dense box)."""
    hull = _hull(ap)
    if hull is None:
        return None
    size = 1
    for lo, hi in hull:
        size *= hi - lo + 1
    count, reach = 1, 0
    for step, num in sorted(p for p in ap.pattern if p[1] > 1):
        if step <= reach:
            return None  # two steps may land on one element: not one element per step
        count *= num
        reach += step * (num - 1)
    return hull if size == count else None


def _within(inner: list[tuple[int, int]] | None, outer: list[tuple[int, int]]) -> bool:
    return inner is not None and all(
        o[0] <= i[0] and i[1] <= o[1] for i, o in zip(inner, outer, strict=True)
    )


def _send(walk, values):
    try:
        return walk.send(values)
    except StopIteration:
        return None


def _keeps_destination(inst: Inst) -> bool:
    """Whether the instruction's result depends on what its destination held: a matmul that
    accumulates, a predicated copy, a DMA that skips out-of-bounds elements."""
    if inst.opcode in ("nc_matmul", "nc_matmul_mx"):
        return inst.attrs.get("accumulate") is not False
    if inst.opcode in ("tensor_copy_predicated", "select_reduce", "range_select"):
        return True
    return inst.attrs.get("oob_mode") == "skip"


def _written_in_loops(kernel: Kernel) -> dict[int, list[Tensor]]:
    """For every loop (by id), the tensors its body writes (nested loops included)."""
    out: dict[int, list[Tensor]] = {}

    def visit(ops: list[Op]) -> dict[int, Tensor]:
        written: dict[int, Tensor] = {}
        for op in ops:
            if isinstance(op, Loop):
                inner = visit(op.body)
                out[id(op)] = list(inner.values())
                written.update(inner)
            elif isinstance(op, Inst):
                for name, ap in op.aps():
                    if is_write(op.opcode, name):
                        written[id(ap.tensor)] = ap.tensor
        return written

    visit(kernel.body)
    return out
