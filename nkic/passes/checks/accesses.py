"""The tensor accesses of a kernel in program order: which instruction reads or writes what."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ...ir.core import AccessPattern, Inst, Kernel, Loop
from ...ir.isa import lookup


@dataclass(frozen=True)
class Access:
    """One operand of one instruction; `index` orders accesses in program order."""

    index: int
    inst: Inst
    operand: str
    ap: AccessPattern
    write: bool
    loops: tuple[Loop, ...]

    def __init__(self, index, inst, operand, ap, write, loops):
        # (a checked kernel has an access per operand: writing the fields into the instance
        # dict costs half of the frozen dataclass's generated __init__)
        d = self.__dict__
        d["index"], d["inst"], d["operand"] = index, inst, operand
        d["ap"], d["write"], d["loops"] = ap, write, loops

    @property
    def reachable(self) -> bool:
        """False inside a loop that never runs."""
        loops = self.loops
        return not loops or all(lp.trip_count for lp in loops)

    @property
    def accumulates(self) -> bool:
        """A matmul adding into PSUM, or either side of an in-place associative update
        `tensor_tensor(dst=t, data1=t, data2=x, op=add)`: an associative reduction, whose
        order does not matter, not an overwrite."""
        if self.inst.opcode in ("nc_matmul", "nc_matmul_mx"):
            return (
                self.write
                and self.ap.tensor.buffer == "psum"
                and self.inst.attrs.get("accumulate") is not False
            )
        return _in_place_reduction(self)


#: ALU operators whose in-place updates of one tensor may run in any order.
ASSOCIATIVE = frozenset({"add", "maximum", "minimum", "multiply"})


def _in_place_reduction(a: Access) -> bool:
    inst = a.inst
    if inst.opcode != "tensor_tensor" or inst.attrs.get("op") not in ASSOCIATIVE:
        return False
    dst = inst.operands.get("dst")
    sides = [inst.operands.get(n) for n in ("data1", "data2")]
    # exactly one side is the updated tensor: `t = t + t` doubles t, it reduces nothing into it
    return a.ap == dst and a.operand in ("dst", "data1", "data2") and sides.count(dst) == 1


def is_write(inst: Inst, operand: str) -> bool:
    return _writes(inst.opcode, operand)


@cache
def _writes(opcode: str, operand: str) -> bool:
    """Does the `operand` of an `opcode` instruction write (by the instruction catalogue)?"""
    d = lookup(opcode)
    p = d.param(operand) if d else None
    if p is not None:
        return p.role == "out"
    return operand in ("dst", "dst_idx", "reduce_res", "dst_scale")


def _first(item: tuple) -> bool:
    return item[0]


def shared_accesses(kernel: Kernel, ctx) -> list[Access]:
    """`accesses(kernel)`, found once for every check of a pipeline run (`ctx.check_memo`);
    a fresh list outside it. Callers must not change the list."""
    memo = ctx.check_memo
    if memo is None:
        return accesses(kernel)
    found = memo.get(id(kernel))
    if found is None:
        # (the kernel is kept with its list, so that no other object takes its id)
        found = memo[id(kernel)] = (kernel, accesses(kernel))
    return found[1]


def accesses(kernel: Kernel) -> list[Access]:
    out: list[Access] = []
    for op, loops in kernel.walk():
        if isinstance(op, Inst):
            # reads happen before the writes of the same instruction
            names = sorted(
                [(_writes(op.opcode, name), name, ap) for name, ap in op.aps()], key=_first
            )
            for write, name, ap in names:
                out.append(Access(len(out), op, name, ap, write, loops))
    return out
