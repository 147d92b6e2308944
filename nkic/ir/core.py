"""Tile IR: tensors (SSA values), access patterns, instructions, loops and kernels."""

from __future__ import annotations

import itertools
import linecache
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .affine import Affine
from .types import DTYPES, ON_CHIP


@dataclass(frozen=True)
class Loc:
    """A source span (1-based lines and columns, end column exclusive) and its inlining stack.

    `stack` holds the call sites through which the op was reached, outermost (the kernel) first.
    """

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    stack: tuple[Loc, ...] = ()

    def with_stack(self, stack: tuple[Loc, ...]) -> Loc:
        return Loc(self.file, self.line, self.col, self.end_line, self.end_col, stack)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 1, 1, 1, 1)

_FOR_TARGET = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\b")


def loop_source_name(loc: Loc) -> str | None:
    """The target of the `for` statement at `loc` in its source file, when the file is
    readable and the target is a plain name other than `_`."""
    text = linecache.getline(loc.file, loc.line)
    match = _FOR_TARGET.search(text, max(0, loc.col - 1)) or _FOR_TARGET.search(text)
    if match is None or match.group(1) == "_":
        return None
    return match.group(1)


@dataclass(eq=False, frozen=True)
class UnrolledLoop:
    """One execution of an `nl.affine_range` loop that the frontend unrolled (its body needed
    the induction variable at compile time). Its iterations may still run in any order, so the
    race check compares them; identity distinguishes executions of the same source loop."""

    loc: Loc
    name: str  # the loop variable as the kernel spells it


class Tensor:
    """An SSA tensor value: a storage region in one buffer with a fixed shape and dtype.

    Defined by a kernel parameter or an `Alloc` op. `address` is (start partition, byte offset)
    for on-chip tensors: requested by the kernel (`address=`) or assigned by allocation.
    `rotate` is (loop var, slot count, slot stride in bytes, phase) when allocation
    multi-buffers a tensor allocated in a loop body: execution n of that body uses slot
    (n + phase) mod count.
    `data` holds the raw row-major bytes of a `constant` tensor (not part of the text form).
    """

    def __init__(
        self,
        name: str,
        buffer: str,
        dtype: str,
        shape: tuple[int, ...],
        label: str = "",
        kind: str = "internal",
        loc: Loc = UNKNOWN_LOC,
        address: tuple[int, int] | None = None,
        fixed_address: bool = False,
        rotate: tuple[str, int, int, int] | None = None,
        data: bytes | None = None,
    ):
        self.name = name
        #: The buffer is fixed at construction; `on_chip` (read for every access of every
        #: pass) is found once from it.
        self.buffer = buffer
        self.on_chip = buffer in ON_CHIP
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.label = label
        self.kind = kind
        self.loc = loc
        self.address = address
        self.fixed_address = fixed_address
        self.rotate = rotate
        self.data = data
        #: A parameter given as a view into a larger HBM buffer (`frontend.args.HbmView`);
        #: lowering (passes/views.py) then makes the tensor that buffer and keeps the
        #: shape the kernel saw in `view_shape`.
        self.view = None
        self.view_shape: tuple[int, ...] | None = None
        #: The HBM scratch of a PSUM spill (passes/spill.py): DMAs to it are spill saves,
        #: from it reloads (the profile's `spill_save_bytes`, `spill_reload_bytes`).
        self.spill = False

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype].itemsize

    @property
    def num_partitions(self) -> int:
        return self.shape[0] if self.on_chip else 1

    @property
    def free_elems(self) -> int:
        """Elements per partition (on-chip) or in total (HBM)."""
        n = 1
        for d in self.shape[1:] if self.on_chip else self.shape:
            n *= d
        return n

    @property
    def bytes_per_partition(self) -> int:
        return self.free_elems * self.itemsize

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def full_pattern(self) -> tuple[tuple[int, int], ...]:
        """The row-major [step, num] pattern covering the whole storage."""
        steps = []
        stride = 1
        for d in reversed(self.shape):
            steps.append((stride, d))
            stride *= d
        return tuple(reversed(steps))

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Dynamic:
    """A runtime part of an access pattern's offset (Language §8), read from an index
    tile that is another operand of the instruction (`index` names it).

    `vector`: one row index per element of the pattern's first pair — element `[w, ...]` reads
    storage element `offset + index[w] * unit + (inner pairs)`; the first pair's step is
    ignored. `scalar`: the whole pattern moves by `index * unit` elements. `unit` (elements of
    the pattern's dtype) is the step of dimension `dim` of the tensor view `.ap()` was called
    on (a reshape to 1-D indexes single elements); when None, `prod(shape[dim + 1:])` of the
    tensor's own shape (`prod(shape[1:])` for `vector`).

    `indirect` (tensor indirection, `.indirect(index)` on a compute operand, trn3): an on-chip
    pattern [partition pair, (ignored step, n)]; element `[p, i]` is storage element
    `offset + p * partition step + index_i * unit`, where `index_i` is the i-th offset of the
    index tile read in the engine's snake order (group size 16 on Vector/Scalar/GpSimd, 32 on
    TensorE: `index[g * G + i % G, (i // G) % K]` with `g = i // (G * K)` for a `(P, K)` tile)
    and must lie in `0..extent-1`.
    """

    kind: str  # "vector" | "scalar" | "indirect"
    index: str
    dim: int = 0
    unit: int | None = None
    #: `indirect` only: the size of the viewed free dimension (offsets lie in 0..extent-1)
    extent: int | None = None

    def __str__(self) -> str:
        unit = "" if self.unit is None else f", {self.unit}"
        extent = "" if self.extent is None else f", {self.extent}"
        return f"{self.kind}({self.index}, {self.dim}{unit}{extent})"

    def step(self, tensor: Tensor, itemsize: int) -> int:
        """Elements (of `itemsize` bytes) one index unit moves the pattern in `tensor`."""
        if self.unit is not None:
            return self.unit
        first = 1 if self.kind == "vector" else self.dim + 1
        return math.prod(tensor.shape[first:]) * tensor.itemsize // itemsize


@dataclass(frozen=True)
class AccessPattern:
    """A view of a tensor's storage: `offset` + sum(i_k * step_k) for each [step, num] pair.

    Units are elements of `dtype` (the tensor's own dtype unless reinterpreted). For on-chip
    tensors the first pair is the partition dimension with step = elements per partition.
    `dynamic` adds a runtime offset (gather/scatter by an index tile: DMA operands, and the
    tensor-indirection operands of compute instructions).
    """

    tensor: Tensor
    offset: Affine
    pattern: tuple[tuple[int, int], ...]
    dtype: str
    dynamic: Dynamic | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.pattern)

    @property
    def num_partitions(self) -> int:
        return self.pattern[0][1] if self.tensor.on_chip else 1

    @property
    def free_size(self) -> int:
        """Elements per partition of the accessed region."""
        n = 1
        for _, num in self.pattern[1:] if self.tensor.on_chip else self.pattern:
            n *= num
        return n

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype].itemsize

    def covering(self) -> AccessPattern:
        """The static access pattern of every element this one may touch: a tensor-indirection
        operand covers the whole free dimension of its view; any other AP is itself."""
        d = self.dynamic
        if d is None or d.kind != "indirect":
            return self
        pattern = (self.pattern[0], (d.unit, d.extent))
        return AccessPattern(self.tensor, self.offset, pattern, self.dtype)

    def __str__(self) -> str:
        pat = ", ".join(f"[{s}, {n}]" for s, n in self.pattern)
        suffix = f" : {self.dtype}" if self.dtype != self.tensor.dtype else ""
        dynamic = f" {self.dynamic}" if self.dynamic is not None else ""
        return f"%{self.tensor.name}[{self.offset}; {pat}]{suffix}{dynamic}"


@dataclass(frozen=True)
class Imm:
    """An immediate operand (a compile-time number, bool or string)."""

    value: Any


Operand = AccessPattern | Imm
AttrValue = None | bool | int | float | str | tuple

_ids = itertools.count()


class Op:
    """Base class of IR operations; every op carries its source location."""

    loc: Loc


class Alloc(Op):
    """Defines an on-chip or HBM tensor; inside a loop body, one allocation per iteration."""

    def __init__(self, result: Tensor, loc: Loc):
        self.result = result
        self.loc = loc


class Operands(dict):
    """An instruction's operands by name, with the access patterns among them (`Inst.aps`)
    found once: every pass and the scheduler ask for them, several times per instruction.
    Every change to the mapping (a pass re-addressing an operand, the Beta 1 frontend
    replacing a masked one) forgets them, so they are found again on the next request."""

    __slots__ = ("_aps",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._aps: tuple[tuple[str, AccessPattern], ...] | None = None

    def __setitem__(self, key, value):
        self._aps = None
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._aps = None
        super().__delitem__(key)

    def __ior__(self, other):
        self._aps = None
        return super().__ior__(other)

    def pop(self, *args):
        self._aps = None
        return super().pop(*args)

    def popitem(self):
        self._aps = None
        return super().popitem()

    def clear(self):
        self._aps = None
        super().clear()

    def update(self, *args, **kwargs):
        self._aps = None
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        self._aps = None
        return super().setdefault(key, default)


class Inst(Op):
    """One `nki.isa` instruction: named operands (access patterns or immediates) and attributes.

    `operands` is an `Operands` copy of the mapping given: change it in place (`inst.operands[
    name] = ap`), never by assigning another mapping, so that `aps` stays that of the
    operands."""

    def __init__(
        self,
        opcode: str,
        operands: dict[str, Operand],
        attrs: dict[str, AttrValue],
        loc: Loc,
        engine: str | None = None,
    ):
        self.opcode = opcode
        self.operands = Operands(operands)
        self.attrs = attrs
        self.loc = loc
        self.engine = engine
        self.uid = next(_ids)
        #: (unrolled affine loop, iteration value) for each enclosing unrolled affine loop,
        #: outermost first. Not part of the text form.
        self.unrolled: tuple[tuple[UnrolledLoop, int], ...] = ()
        #: (loop variable as the kernel spells it, value) of every enclosing loop the frontend
        #: unrolled, outermost first: the iteration profiles and faults name. Not part of the
        #: text form.
        self.iteration: tuple[tuple[str, int], ...] = ()

    def aps(self) -> tuple[tuple[str, AccessPattern], ...]:
        """The access-pattern operands, by name, in operand order (found once per version of
        the operands, see `Operands`)."""
        operands = self.operands
        found = operands._aps
        if found is None:
            found = operands._aps = tuple(
                [(name, o) for name, o in operands.items() if isinstance(o, AccessPattern)]
            )
        return found


class Loop(Op):
    """A counted loop kept symbolic: the body runs once per value of the induction variable."""

    def __init__(
        self,
        var: str,
        start: int,
        stop: int,
        step: int,
        mode: str,
        body: list[Op],
        loc: Loc,
    ):
        self.var = var
        self.start = start
        self.stop = stop
        self.step = step
        self.mode = mode  # "affine" or "sequential"
        self.body = body
        self.loc = loc
        #: a Python `range` loop kept as one loop because that is provably identical to
        #: unrolling it: the language unrolls it, so checks that compare the control flow of
        #: programs (the cores of an LNC launch) see it unrolled
        self.python = False

    @property
    def trip_count(self) -> int:
        return max(0, -(-(self.stop - self.start) // self.step))

    @property
    def source_name(self) -> str:
        """The loop variable as the kernel source spells it (`for k in ...` gives `k`), else
        the IR name: what checks, profiles and faults print as `name=value`."""
        return loop_source_name(self.loc) or self.var

    @property
    def last(self) -> int:
        return self.start + (self.trip_count - 1) * self.step


class DynLoop(Loop):
    """A loop whose trip count is read at run time (`nl.dynamic_range`, `while reg:`,
    `nl.fori_loop`, `nl.while_loop`): the engine sequencers run its body once per iteration
    and compare-and-branch on registers (`reg` tensors of shape (1,), int32).

    `kind` "for": the register `counter` takes `start`, `start + step`, ... while below `stop`
    (`start`/`stop` an int or a register, read once on entry); "while": the body runs while the
    register `cond` is non-zero, tested before every iteration. For the static passes it is a
    loop of one iteration of its own (no affine index uses `var`): what the body touches stays
    live for the whole loop and what it allocates is allocated once. The backend schedules its
    body apart and joins every queue at entry, after each iteration and at exit.
    """

    def __init__(
        self,
        var: str,
        kind: str,
        start: int | Tensor,
        stop: int | Tensor | None,
        step: int,
        counter: Tensor | None,
        cond: Tensor | None,
        body: list[Op],
        loc: Loc,
    ):
        super().__init__(var, 0, 1, 1, "sequential", body, loc)
        self.kind = kind
        self.bound_start = start
        self.bound_stop = stop
        self.bound_step = step
        self.counter = counter
        self.cond = cond

    def registers(self) -> list[Tensor]:
        """The registers the loop reads or writes itself (bounds, counter, condition)."""
        regs = [self.bound_start, self.bound_stop, self.counter, self.cond]
        return [r for r in regs if isinstance(r, Tensor)]

    def header(self) -> str:
        """`for %r = 0 to %n step 1` or `while %c` (asm and IR listings)."""

        def show(v) -> str:
            return f"%{v.name}" if isinstance(v, Tensor) else str(v)

        if self.kind == "while":
            return f"dynamic while {show(self.cond)}"
        counter = show(self.counter) if self.counter is not None else "_"
        return (
            f"dynamic for {counter} = {show(self.bound_start)} to {show(self.bound_stop)} "
            f"step {self.bound_step}"
        )


def walk_ops(ops: list[Op], loops: tuple[Loop, ...] = ()) -> Iterator[tuple[Op, tuple[Loop, ...]]]:
    """Every op of `ops` and of the loop bodies inside them, in program order, with the loops
    enclosing it inside `ops` (outermost first) after `loops`.

    One generator with a stack of the outer bodies' iterators, not one generator per loop
    (every pass walks the kernel, and each op would be passed up through a generator per
    enclosing loop)."""
    outer: list[tuple[Iterator[Op], tuple[Loop, ...]]] = []
    ops_left = iter(ops)
    while True:
        for op in ops_left:
            yield op, loops
            if isinstance(op, Loop):
                outer.append((ops_left, loops))
                ops_left, loops = iter(op.body), loops + (op,)
                break
        else:
            if not outer:
                return
            ops_left, loops = outer.pop()


def _has_dynamic_loops(ops: list[Op]) -> bool:
    for op in ops:
        if isinstance(op, Loop) and (isinstance(op, DynLoop) or _has_dynamic_loops(op.body)):
            return True
    return False


@dataclass
class Kernel:
    """A specialised kernel: tensor parameters, a body of ops, and the returned tensors."""

    name: str
    target: str
    params: list[Tensor] = field(default_factory=list)
    body: list[Op] = field(default_factory=list)
    returns: list[Tensor] = field(default_factory=list)
    #: Per entry of `returns`: the returned view of the tensor as (shape, element offset,
    #: element strides), or None when the whole tensor is returned.
    return_views: list[tuple | None] = field(default_factory=list)
    #: The physical core this program runs on and the launch's core count (LNC degree):
    #: what `nl.program_id()` and `nl.num_programs()` return while specialising.
    core: int = 0
    cores: int = 1
    #: Whether specialisation asked for the core id or count (then each LNC is checked).
    reads_core: bool = False

    def walk(self) -> Iterator[tuple[Op, tuple[Loop, ...]]]:
        """Every op in program order with its enclosing loops (outermost first)."""
        return walk_ops(self.body)

    def instructions(self) -> Iterator[Inst]:
        for op, _ in self.walk():
            if isinstance(op, Inst):
                yield op

    def tensors(self) -> list[Tensor]:
        out = list(self.params)
        out += [op.result for op, _ in self.walk() if isinstance(op, Alloc)]
        return out

    def has_dynamic_loops(self) -> bool:
        return _has_dynamic_loops(self.body)

    def files(self) -> list[str]:
        seen: dict[str, None] = {}
        # the ops of one inlined call share its stack: its files are added once (they are in
        # `seen` already the next time; the ops keep every stack alive, so ids are not reused)
        stacks: set[int] = set()
        for op, _ in self.walk():
            loc = op.loc
            stack = loc.stack
            if stack and id(stack) not in stacks:
                stacks.add(id(stack))
                for frame in stack:
                    seen.setdefault(frame.file)
            seen.setdefault(loc.file)
        for t in self.params:
            seen.setdefault(t.loc.file)
        return [f for f in seen if f != UNKNOWN_LOC.file]
