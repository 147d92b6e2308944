"""The rules every well-formed tile IR kernel obeys; passes may assume them and must keep them.

`verify` returns the list of structural problems (empty = well-formed). A violation is a bug
in whatever produced the IR (frontend or pass), never a user error.
"""

from __future__ import annotations

from .affine import Affine
from .core import AccessPattern, Alloc, Imm, Inst, Kernel, Loop, Op, Tensor
from .isa import lookup
from .target import TARGET_NAMES as TARGETS
from .types import BUFFERS, DTYPES

LOOP_MODES = ("affine", "sequential")
KINDS = ("input", "output", "internal", "constant")


#: Instructions whose HBM operands may carry a dynamic offset (gather/scatter by DMA).
DYNAMIC_OPCODES = frozenset({"dma_copy", "dma_compute", "dma_transpose"})


class VerifierError(Exception):
    """The IR broke a structural rule; carries the list of problems."""

    def __init__(self, problems: list[str], where: str = ""):
        self.problems = list(problems)
        head = f"IR verification failed{' ' + where if where else ''}"
        super().__init__(head + ":\n  " + "\n  ".join(self.problems))


class _Verifier:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.problems: list[str] = []
        self.defined: set[str] = set()
        self.loop_vars: set[str] = set()
        self.top_scope: set[str] = set()

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def tensor(self, t: Tensor, where: str) -> None:
        if t.name in self.defined:
            self.problem(f"{where}: value %{t.name} is defined twice")
        if t.buffer not in BUFFERS:
            self.problem(f"{where}: unknown buffer {t.buffer!r}")
        if t.dtype not in DTYPES:
            self.problem(f"{where}: unknown dtype {t.dtype!r}")
        if t.kind not in KINDS:
            self.problem(f"{where}: unknown tensor kind {t.kind!r}")
        if not t.shape or any(d < 1 for d in t.shape):
            self.problem(f"{where}: shape {list(t.shape)} must have dimensions >= 1")
        if t.address is not None and not t.on_chip:
            self.problem(f"{where}: only on-chip tensors have an address")

    def rotate(self, t: Tensor, loops: tuple[Loop, ...], where: str) -> None:
        if t.rotate is None:
            return
        var, count, stride = t.rotate
        if not loops or loops[-1].var != var:
            self.problem(f"{where}: rotate names ${var}, not the innermost enclosing loop")
        if count < 1:
            self.problem(f"{where}: rotate count {count} must be >= 1")
        if t.dtype in DTYPES and stride < t.bytes_per_partition:
            self.problem(f"{where}: rotate stride {stride} is smaller than the tensor's bytes")
        if not t.on_chip:
            self.problem(f"{where}: only on-chip tensors rotate")

    def ap(self, ap: AccessPattern, scope: set[str], loop_vars: set[str], where: str) -> None:
        t = ap.tensor
        if t.name not in scope:
            self.problem(f"{where}: %{t.name} is not defined in an enclosing scope before use")
        if not isinstance(ap.offset, Affine):
            self.problem(f"{where}: offset {ap.offset!r} is not an affine expression")
            return
        for v in ap.offset.vars:
            if v not in loop_vars:
                self.problem(f"{where}: ${v} is not an enclosing loop variable")
        if ap.dtype not in DTYPES:
            self.problem(f"{where}: unknown dtype {ap.dtype!r}")
            return
        if not ap.pattern:
            self.problem(f"{where}: empty access pattern")
            return
        if not all(
            isinstance(pair, tuple) and len(pair) == 2 and all(type(x) is int for x in pair)
            for pair in ap.pattern
        ):
            self.problem(f"{where}: pattern {ap.pattern!r} is not a tuple of [step, num] pairs")
            return
        if any(num < 1 for _, num in ap.pattern):
            self.problem(f"{where}: pattern nums must be >= 1, got {list(ap.pattern)}")
        if t.on_chip and t.dtype in DTYPES:
            row_bytes = t.bytes_per_partition
            if row_bytes % ap.itemsize:
                self.problem(
                    f"{where}: {row_bytes} bytes per partition of %{t.name} are not a whole "
                    f"number of {ap.dtype} elements"
                )
                return
            step, num = ap.pattern[0]
            if step != row_bytes // ap.itemsize:
                self.problem(
                    f"{where}: on-chip pattern must start with the partition pair "
                    f"[{row_bytes // ap.itemsize}, P], got [{step}, {num}]"
                )

    def inst(self, op: Inst, scope: set[str], loops: tuple[Loop, ...]) -> None:
        where = f"{op.opcode} at {op.loc}"
        d = lookup(op.opcode)
        loop_vars = {lp.var for lp in loops}
        for name, o in op.operands.items():
            if isinstance(o, AccessPattern):
                self.ap(o, scope, loop_vars, f"{where} operand {name}")
            elif not isinstance(o, Imm):
                self.problem(f"{where}: operand {name} is neither an access pattern nor an Imm")
        if d is None:
            self.problem(f"{where}: unknown opcode {op.opcode!r}")
            return
        if op.engine is not None and op.engine not in d.engines:
            self.problem(f"{where}: engine {op.engine!r} cannot run {op.opcode}")
        ins_params = [p.name for p in d.params if p.role == "ins"]
        indices = self.dynamic_indices(op, where)
        for name in op.operands:
            p = d.param(name)
            if name in indices:
                continue
            if p is None and not any(name.startswith(i) for i in ins_params):
                self.problem(f"{where}: unknown operand {name!r}")
            elif p is not None and not p.is_tensor:
                self.problem(f"{where}: {name!r} is an attribute, not an operand")
        for p in d.params:
            if p.is_tensor and p.required and p.role != "ins" and p.name not in op.operands:
                self.problem(f"{where}: missing required operand {p.name!r}")
            if p.role == "out" and p.name in op.operands:
                if not isinstance(op.operands[p.name], AccessPattern):
                    self.problem(f"{where}: output operand {p.name!r} must be an access pattern")
        acc = op.attrs.get("accumulate")
        if isinstance(acc, tuple):
            for v in acc:
                if v not in loop_vars:
                    self.problem(f"{where}: accumulate names ${v}, not an enclosing loop variable")

    def dynamic_indices(self, op: Inst, where: str) -> set[str]:
        """The operands holding index tiles of the instruction's dynamic access patterns, each
        checked: an on-chip access pattern, used by one dynamic AP of a DMA instruction."""
        out = set()
        for name, o in op.operands.items():
            dyn = o.dynamic if isinstance(o, AccessPattern) else None
            if dyn is None:
                continue
            index = op.operands.get(dyn.index)
            if op.opcode not in DYNAMIC_OPCODES:
                self.problem(f"{where}: operand {name} has a dynamic offset; only DMA may")
            elif not isinstance(index, AccessPattern) or not index.tensor.on_chip:
                self.problem(f"{where}: index operand {dyn.index!r} of {name} is not on chip")
            elif index.dynamic is not None or dyn.index in out:
                self.problem(f"{where}: index operand {dyn.index!r} is used twice or dynamic")
            elif o.tensor.on_chip:
                self.problem(f"{where}: operand {name} has a dynamic offset but is on chip")
            out.add(dyn.index)
        return out

    def block(self, ops: list[Op], scope: set[str], loops: tuple[Loop, ...]) -> None:
        scope = set(scope)
        for op in ops:
            if isinstance(op, Alloc):
                where = f"alloc %{op.result.name} at {op.loc}"
                self.tensor(op.result, where)
                self.rotate(op.result, loops, where)
                self.defined.add(op.result.name)
                scope.add(op.result.name)
            elif isinstance(op, Inst):
                self.inst(op, scope, loops)
            elif isinstance(op, Loop):
                where = f"loop ${op.var} at {op.loc}"
                if op.var in self.loop_vars:
                    self.problem(f"{where}: loop variable ${op.var} is not unique")
                self.loop_vars.add(op.var)
                if op.step <= 0:
                    self.problem(f"{where}: step {op.step} must be > 0")
                if op.mode not in LOOP_MODES:
                    self.problem(f"{where}: unknown loop mode {op.mode!r}")
                self.block(op.body, scope, loops + (op,))
            else:
                self.problem(f"unknown op {op!r}")
        if not loops:
            self.top_scope = scope

    def run(self) -> list[str]:
        if self.kernel.target not in TARGETS:
            self.problem(f"unknown target {self.kernel.target!r}")
        scope = set()
        for p in self.kernel.params:
            self.tensor(p, f"param %{p.name}")
            self.defined.add(p.name)
            scope.add(p.name)
        self.block(self.kernel.body, scope, ())
        for t in self.kernel.returns:
            if t.name not in self.top_scope:
                self.problem(f"return of %{t.name}, which is not defined at kernel scope")
        return self.problems


def verify(kernel: Kernel) -> list[str]:
    """Every structural problem of `kernel` (empty list: well-formed)."""
    return _Verifier(kernel).run()


def verify_or_raise(kernel: Kernel, where: str = "") -> None:
    problems = verify(kernel)
    if problems:
        raise VerifierError(problems, where)
