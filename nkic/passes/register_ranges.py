"""What the registers of a kernel may hold, where it can be told at compile time: intervals
over the values each register (`reg` tensor) is written, for the static bounds check of
accesses at a register offset (`.ap(scalar_offset=reg)`).

A register's interval is the union over every write: a dynamic loop's counter with integer
bounds, `register_move` of an immediate or a register, `register_alu` (`+ - *`) of known
intervals. A `register_load` (data) makes it unknown. `exact` marks an interval whose both
ends are values the register really takes when the code runs (one write, by a counter or an
immediate, through `+ - *` by constants): only those can prove an access out of bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import AccessPattern, DynLoop, Imm, Inst, Kernel, Tensor

INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Range:
    lo: int
    hi: int
    exact: bool


def _operand(o, known: dict[Tensor, Range | None]) -> Range | None:
    if isinstance(o, Imm) and isinstance(o.value, int):
        return Range(o.value, o.value, True)
    if isinstance(o, AccessPattern):
        return known.get(o.tensor)
    return None


def _alu(op: str, a: Range, b: Range) -> Range | None:
    constant = a.lo == a.hi or b.lo == b.hi
    if op == "add":
        lo, hi = a.lo + b.lo, a.hi + b.hi
    elif op == "subtract":
        lo, hi = a.lo - b.hi, a.hi - b.lo
    elif op == "multiply":
        ends = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        lo, hi = min(ends), max(ends)
    else:
        return None
    if lo < INT32[0] or hi > INT32[1]:
        return None  # it may wrap around
    return Range(lo, hi, a.exact and b.exact and constant)


def register_ranges(kernel: Kernel) -> dict[Tensor, Range | None]:
    """The interval of each register written in `kernel` (None: unknown)."""
    writes: dict[Tensor, list] = {}
    for op, _ in kernel.walk():
        if isinstance(op, DynLoop) and op.counter is not None:
            writes.setdefault(op.counter, []).append(op)
        elif isinstance(op, Inst) and op.opcode.startswith("register_"):
            dst = op.operands.get("dst")
            if isinstance(dst, AccessPattern) and dst.tensor.buffer == "reg":
                writes.setdefault(dst.tensor, []).append(op)
    known: dict[Tensor, Range | None] = {}
    for _ in range(len(writes) + 1):  # values flow through at most every register once
        changed = False
        for reg, ops in writes.items():
            r = _union([_written(op, known) for op in ops])
            if known.get(reg, 0) != r:
                known[reg], changed = r, True
        if not changed:
            break
    return known


def _written(op, known) -> Range | None:
    if isinstance(op, DynLoop):
        start, stop = op.bound_start, op.bound_stop
        if op.kind != "for" or not isinstance(start, int) or not isinstance(stop, int):
            return None
        values = range(start, stop, op.bound_step)
        return Range(values[0], values[-1], True) if values else None
    if op.opcode == "register_move":
        return _operand(op.operands["src"], known)
    if op.opcode == "register_alu":
        a, b = _operand(op.operands["data0"], known), _operand(op.operands["data1"], known)
        return _alu(str(op.attrs.get("op")), a, b) if a and b else None
    return None


def _union(ranges: list[Range | None]) -> Range | None:
    if not ranges or any(r is None for r in ranges):
        return None
    if len(ranges) == 1:
        return ranges[0]
    return Range(min(r.lo for r in ranges), max(r.hi for r in ranges), False)
