"""The rules every well-formed tile IR kernel obeys; passes may assume them and must keep them.

`verify` returns the list of structural problems (empty = well-formed). A violation is a bug
in whatever produced the IR (frontend or pass), never a user error.
"""

from __future__ import annotations

from functools import cache

from .affine import Affine
from .core import AccessPattern, Alloc, DynLoop, Imm, Inst, Kernel, Loop, Op, Tensor
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


class _Where:
    """Where a problem is, formatted only when there is one (most instructions have none)."""

    __slots__ = ("op", "suffix")

    def __init__(self, op: Inst, suffix: str = ""):
        self.op = op
        self.suffix = suffix

    def __str__(self) -> str:
        return f"{self.op.opcode} at {self.op.loc}{self.suffix}"


def _is_pattern(pattern: object) -> bool:
    """A tuple of (int step, int num) pairs."""
    for pair in pattern:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return False
        step, num = pair
        if type(step) is not int or type(num) is not int:
            return False
    return True


class _Verifier:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.problems: list[str] = []
        self.defined: set[str] = set()
        self.loop_vars: set[str] = set()
        self.top_scope: set[str] = set()
        #: bytes per partition of each on-chip tensor, found once
        self.row_bytes: dict[Tensor, int] = {}

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
        var, count, stride, phase = t.rotate
        if not loops or loops[-1].var != var:
            self.problem(f"{where}: rotate names ${var}, not the innermost enclosing loop")
        if count < 1:
            self.problem(f"{where}: rotate count {count} must be >= 1")
        elif not 0 <= phase < count:
            self.problem(f"{where}: rotate phase {phase} must be in 0..{count - 1}")
        if t.dtype in DTYPES and stride < t.bytes_per_partition:
            self.problem(f"{where}: rotate stride {stride} is smaller than the tensor's bytes")
        if not t.on_chip:
            self.problem(f"{where}: only on-chip tensors rotate")

    def ap_ok(self, ap: AccessPattern, scope: set[str], loop_vars: set[str]) -> bool:
        """Whether `ap` has none of the problems `ap` looks for, decided without building
        their messages (most instructions of a kernel have none)."""
        t = ap.tensor
        offset = ap.offset
        pattern = ap.pattern
        if t.name not in scope or type(offset) is not Affine or ap.dtype not in DTYPES:
            return False
        if not pattern or type(pattern) is not tuple:
            return False
        for v, _ in offset.terms:
            if v not in loop_vars:
                return False
        for pair in pattern:
            if type(pair) is not tuple or len(pair) != 2:
                return False
            step, num = pair
            if type(step) is not int or type(num) is not int or num < 1:
                return False
        if t.on_chip and t.dtype in DTYPES:
            row_bytes = self.row_bytes.get(t)
            if row_bytes is None:
                row_bytes = self.row_bytes[t] = t.bytes_per_partition
            itemsize = DTYPES[ap.dtype].itemsize
            return not row_bytes % itemsize and pattern[0][0] == row_bytes // itemsize
        return True

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
        if not _is_pattern(ap.pattern):
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

    def inst(self, op: Inst, scope: set[str], loops: tuple[Loop, ...], loop_vars: set[str]) -> None:
        where = _Where(op)
        d = lookup(op.opcode)
        for name, o in op.operands.items():
            if isinstance(o, AccessPattern):
                if not self.ap_ok(o, scope, loop_vars):
                    self.ap(o, scope, loop_vars, _Where(op, f" operand {name}"))
            elif not isinstance(o, Imm):
                self.problem(f"{where}: operand {name} is neither an access pattern nor an Imm")
        if d is None:
            self.problem(f"{where}: unknown opcode {op.opcode!r}")
            return
        if op.engine is not None and op.engine not in d.engines:
            self.problem(f"{where}: engine {op.engine!r} cannot run {op.opcode}")
        indices = self.dynamic_indices(op, where)
        kinds = tuple((name, isinstance(o, AccessPattern)) for name, o in op.operands.items())
        for text in _operand_problems(op.opcode, kinds, tuple(sorted(indices))):
            self.problem(f"{where}: {text}")
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
            if dyn.kind == "indirect":
                self.indirect(op, name, o, index, where)
            elif op.opcode not in DYNAMIC_OPCODES:
                self.problem(f"{where}: operand {name} has a dynamic offset; only DMA may")
            elif not isinstance(index, AccessPattern) or not (
                index.tensor.on_chip or index.tensor.buffer == "reg"
            ):
                self.problem(
                    f"{where}: index operand {dyn.index!r} of {name} is neither on chip nor "
                    "a register"
                )
            elif index.dynamic is not None or dyn.index in out:
                self.problem(f"{where}: index operand {dyn.index!r} is used twice or dynamic")
            elif o.tensor.on_chip:
                self.problem(f"{where}: operand {name} has a dynamic offset but is on chip")
            out.add(dyn.index)
        return out

    def indirect(self, op: Inst, name: str, ap: AccessPattern, index, where: str) -> None:
        """A tensor-indirection operand: an on-chip [partition, offsets] pattern whose index
        operand is an SBUF access pattern (which operands of which instructions take one is an
        operand rule, reported to the user; the NEFF reader refuses the others)."""
        if not ap.tensor.on_chip or len(ap.pattern) != 2:
            self.problem(f"{where}: operand {name} is indirect but not a 2-D on-chip operand")
        elif not isinstance(index, AccessPattern) or index.tensor.buffer != "sbuf":
            self.problem(f"{where}: index operand {ap.dynamic.index!r} of {name} is not in SBUF")
        elif ap.dynamic.unit is None or ap.dynamic.extent is None:
            self.problem(f"{where}: indirect operand {name} lacks its unit or extent")

    def dyn_loop(self, op: DynLoop, scope: set[str], loops: tuple[Loop, ...], where: str) -> None:
        """A dynamic loop: its registers defined, and only dynamic loops around it (the backend
        joins the queues at its boundaries, which a hardware loop around it cannot repeat)."""
        if any(not isinstance(lp, DynLoop) for lp in loops):
            self.problem(f"{where}: a dynamic loop inside a static loop")
        if op.kind not in ("for", "while"):
            self.problem(f"{where}: unknown dynamic loop kind {op.kind!r}")
        for reg in op.registers():
            if reg.buffer != "reg" or reg.name not in scope:
                self.problem(f"{where}: %{reg.name} is not a register in scope")

    def block(self, ops: list[Op], scope: set[str], loops: tuple[Loop, ...]) -> None:
        """Check `ops` with the tensors of `scope` defined. The body's allocations are added to
        `scope` and, in a loop body, taken out again on leaving it: not a copy of `scope` per
        body (an unrolled kernel has tens of thousands of tensors and hundreds of loops)."""
        added = []
        loop_vars = {lp.var for lp in loops}
        for op in ops:
            if isinstance(op, Alloc):
                where = f"alloc %{op.result.name} at {op.loc}"
                self.tensor(op.result, where)
                self.rotate(op.result, loops, where)
                self.defined.add(op.result.name)
                if op.result.name not in scope:
                    scope.add(op.result.name)
                    added.append(op.result.name)
            elif isinstance(op, Inst):
                self.inst(op, scope, loops, loop_vars)
            elif isinstance(op, Loop):
                where = f"loop ${op.var} at {op.loc}"
                if op.var in self.loop_vars:
                    self.problem(f"{where}: loop variable ${op.var} is not unique")
                self.loop_vars.add(op.var)
                if op.step <= 0:
                    self.problem(f"{where}: step {op.step} must be > 0")
                if op.mode not in LOOP_MODES:
                    self.problem(f"{where}: unknown loop mode {op.mode!r}")
                if isinstance(op, DynLoop):
                    self.dyn_loop(op, scope, loops, where)
                self.block(op.body, scope, loops + (op,))
            else:
                self.problem(f"unknown op {op!r}")
        if not loops:
            self.top_scope = scope
        else:
            scope.difference_update(added)

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


@cache
def _variadic(opcode: str) -> tuple[str, ...]:
    """The instruction's variadic operand prefixes (`ins` parameters)."""
    return tuple(p.name for p in lookup(opcode).params if p.role == "ins")


@cache
def _operand_problems(
    opcode: str, kinds: tuple[tuple[str, bool], ...], indices: tuple[str, ...]
) -> tuple[str, ...]:
    """What is wrong with the operand names of an `opcode` instruction, given which operands
    are access patterns and which hold the indices of dynamic access patterns: the same for
    every instruction with these operands, so found once."""
    d = lookup(opcode)
    names = dict(kinds)
    out = []
    for name in names:
        p = d.param(name)
        if name in indices:
            continue
        if p is None and not any(name.startswith(i) for i in _variadic(opcode)):
            out.append(f"unknown operand {name!r}")
        elif p is not None and not p.is_tensor:
            out.append(f"{name!r} is an attribute, not an operand")
    for p in d.params:
        if p.is_tensor and p.required and p.role != "ins" and p.name not in names:
            out.append(f"missing required operand {p.name!r}")
        if p.role == "out" and p.name in names and not names[p.name]:
            out.append(f"output operand {p.name!r} must be an access pattern")
    return tuple(out)


def verify(kernel: Kernel) -> list[str]:
    """Every structural problem of `kernel` (empty list: well-formed)."""
    return _Verifier(kernel).run()


def verify_or_raise(kernel: Kernel, where: str = "") -> None:
    problems = verify(kernel)
    if problems:
        raise VerifierError(problems, where)
