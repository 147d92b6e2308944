"""Engine assignment: which engine executes each instruction (the `engine` field of Inst)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.core import AccessPattern, Inst, Kernel
from ..ir.isa import lookup
from ..passes.base import Pass, PassContext

INT32 = ("int32", "uint32")


def default_engine(inst: Inst) -> str:
    """The engine nkic picks when the kernel does not name an allowed one."""
    allowed = lookup(inst.opcode).engines
    aps = [ap for _, ap in inst.aps()]
    if inst.opcode == "tensor_tensor":
        all_int = aps and all(ap.dtype in INT32 for ap in aps)
        on_psum = any(ap.tensor.buffer == "psum" for ap in aps)
        return "gpsimd" if all_int and not on_psum else "vector"
    if inst.opcode == "nc_transpose":
        dst = inst.operands.get("dst")
        on_psum = isinstance(dst, AccessPattern) and dst.tensor.buffer == "psum"
        return "tensor" if on_psum else "vector"
    if inst.opcode in ("tensor_copy", "memset") and "vector" in allowed:
        return "vector"
    return allowed[0]


def choose_engine(inst: Inst) -> str:
    allowed = lookup(inst.opcode).engines
    if inst.engine in allowed:
        return inst.engine
    requested = inst.attrs.get("engine")
    if isinstance(requested, str) and requested in allowed:
        return requested
    return default_engine(inst)


@dataclass(frozen=True)
class AssignEngines(Pass):
    """Sets `Inst.engine`: the kernel's `engine=` if allowed, else nkic's default."""

    name: ClassVar[str] = "assign-engines"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        for inst in kernel.instructions():
            inst.engine = choose_engine(inst)
