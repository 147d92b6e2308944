"""Instruction queues and semaphore waits from data dependencies (docs/neff-format.md `waits`).

Two instructions on different queues depend on each other when one writes memory the other
touches (RAW, WAR, WAW). On-chip accesses are compared by physical address after allocation,
so tensors that share memory at different times are ordered too; HBM accesses by tensor.
Regions are compared with interval arithmetic over the affine offsets, for the same iteration
and for every loop that may carry the dependency; loops are never enumerated. A wait
`[producer, skip]` targets the producer instance `skip` instances before its latest issued one:
0 is always safe; the skip names the latest conflicting instance, affine in the consumer's loop
variables where it can be proved (skips.py), and a multi-buffered tensor lets the consumer
skip the instances that use other slots.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cache
from heapq import heapify, heappop, heapreplace

from ..ir.affine import Affine
from ..ir.core import AccessPattern, DynLoop, Inst, Kernel, Loop, Op, Tensor
from ..ir.isa import lookup
from ..ir.target import target
from ..passes.base import without_gc
from ..passes.regions import (
    Region,
    hbm_rows,
    instances_may_overlap,
    loop_ranges,
    region,
    row_elems,
)
from .engines import choose_engine
from .skips import exact_skip

#: Instructions that read the current contents of their outputs (partial or predicated writes).
READS_OUTPUTS = ("tensor_copy_predicated", "nc_stream_shuffle")
MATMULS = ("nc_matmul", "nc_matmul_mx")


@dataclass(frozen=True)
class Clamped:
    """A per-iteration skip `max(0, expr)`: exact where `expr` >= 0, the newest instance
    (always safe) where it would be negative (docs/neff-format.md `waits`, `clamp`)."""

    expr: Affine

    def evaluate(self, env: dict[str, int]) -> int:
        return max(0, self.expr.evaluate(env))


#: A wait's skip: a constant, or affine in the consumer's loop variables (maybe clamped at 0).
Skip = int | Affine | Clamped


def written_operands(inst: Inst) -> frozenset[str]:
    """Operand names the instruction writes: the catalogue's `out` roles."""
    return _written(inst.opcode, tuple(inst.operands))


@cache
def _written(opcode: str, operands: tuple[str, ...]) -> frozenset[str]:
    d = lookup(opcode)
    outs = set(d.outputs) if d else set()
    return frozenset(
        n for n in operands if n in outs or n == "dst" or n.startswith("dst_") or n.endswith("_dst")
    )


def reads_outputs(inst: Inst) -> bool:
    if inst.opcode in MATMULS:
        return inst.attrs.get("accumulate") not in (False, None)
    return inst.opcode in READS_OUTPUTS


@dataclass(frozen=True)
class Access:
    """One memory access of an instruction: bytes of a buffer (on-chip) or of an HBM tensor."""

    write: bool
    key: tuple
    tensor: Tensor
    region: Region  # bytes, physical for placed on-chip tensors, slot 0 of a rotated tensor
    slots_span: int  # bytes from the first to the last slot of a rotated tensor
    box: tuple[int, int, int, int]  # partition and byte bounds over every instance and slot
    rows: tuple[int, Region] | None = None  # HBM: row bytes and the region row by row
    exact: bool = False  # one instance touching every byte of `box` (a dense loop-free access)

    def __init__(self, write, key, tensor, region, slots_span, box, rows=None, exact=False):
        # (each instruction has its accesses: writing the fields into the instance dict costs
        # half of the frozen dataclass's generated __init__)
        d = self.__dict__
        d["write"], d["key"], d["tensor"], d["region"] = write, key, tensor, region
        d["slots_span"], d["box"], d["rows"], d["exact"] = slots_span, box, rows, exact

    @property
    def widened(self) -> Region:
        """The region covering every slot (for comparing with other tensors)."""
        r = self.region
        span = self.slots_span
        return Region(r.part, r.part_lo, r.part_hi, r.free, r.free_lo, r.free_hi + span, 1)


def _contiguous(pattern) -> bool:
    """Do the [step, num] pairs enumerate consecutive elements?"""
    expected = 1
    for step, num in reversed([pair for pair in pattern if pair[1] > 1]):
        if step != expected:
            return False
        expected *= num
    return True


def _dense(ap: AccessPattern, r: Region) -> bool:
    """Does the loop-free `ap` touch every element of its region `r` (and nothing else)?"""
    if ap.dynamic is not None or ap.offset.terms:
        return False
    if not ap.tensor.on_chip:
        return _contiguous(ap.pattern)
    step, num = ap.pattern[0]
    row = row_elems(ap)
    inside = 0 <= r.free.const + r.free_lo and r.free.const + r.free_hi < row
    return (num == 1 or step == row) and inside and _contiguous(ap.pattern[1:])


def _accesses(
    inst: Inst,
    loops: tuple[Loop, ...],
    fixed: dict[tuple, tuple[Access, Access]],
    placed: dict[tuple, tuple],
) -> list[Access]:
    """The accesses of `inst`; those outside loops at a constant pattern come from `fixed`
    (an unrolled kernel repeats its tiles' patterns), which keeps their read and write forms.
    The region of such an access of an on-chip tensor depends only on where the tensor is
    placed and its bytes per partition: `placed` keeps it for the next tensor placed there
    (an unrolled loop's tiles take turns in the same slots)."""
    written = written_operands(inst)
    ranges = loop_ranges(loops)
    out = []
    for name, ap in inst.aps():
        t = ap.tensor
        same = where = None
        if not loops and ap.dynamic is None and not ap.offset.terms:
            same = (id(t), ap.offset.const, ap.pattern, ap.dtype)
            found = fixed.get(same)
            if found is None and t.on_chip and t.address is not None:
                where = (t.buffer, t.address, t.bytes_per_partition, t.rotate, *same[1:])
                shape = placed.get(where)
                if shape is not None:
                    found = fixed[same] = _forms(t, shape)
            if found is not None:
                is_write = name in written
                out.append(found[is_write])
                if is_write and reads_outputs(inst):
                    out.append(found[False])
                continue
        r = region(ap, ranges)
        exact = not loops and _dense(ap, r)
        rows = None
        if t.on_chip and t.address is not None:
            key: tuple = (t.buffer,)
            r = r.to_bytes(t.address[0], t.address[1])
        else:
            key = ("tensor", id(t))
            r = r.to_bytes()
            rows = hbm_rows(ap, ranges)
        span = (t.rotate[1] - 1) * t.rotate[2] if t.rotate else 0
        plo, phi = r.part_bounds(ranges)
        blo, bhi = r.free_bounds(ranges)
        shape = (key, r, span, (plo, phi, blo, bhi + span), rows, exact)
        forms = _forms(t, shape)
        if same is not None:
            fixed[same] = forms
        if where is not None:
            placed[where] = shape
        is_write = name in written
        out.append(forms[is_write])
        if is_write and reads_outputs(inst):
            out.append(forms[False])
    return out


def _forms(t: Tensor, shape: tuple) -> tuple[Access, Access]:
    """The read and the write access of `t` with `shape`: (key, region, slots span, box,
    rows, exact)."""
    return Access(False, shape[0], t, *shape[1:]), Access(True, shape[0], t, *shape[1:])


@dataclass(eq=False)
class Scheduled:
    """An instruction with its program-order id, queue, enclosing loops and waits."""

    inst: Inst
    id: int
    engine: str
    queue: str
    loops: tuple[Loop, ...]
    pos: int
    accesses: list[Access]
    waits: list[tuple[int, Skip]] = field(default_factory=list)
    #: Happens-before: for each queue, the id of the newest instruction on it whose every
    #: instance has completed before any instance of this one starts (see `_clocks`).
    clock: dict[str, int] = field(default_factory=dict)
    #: The same for this instruction's last instance.
    final: dict[str, int] = field(default_factory=dict)
    #: The same for one instance and the instances of its loop body's iteration (see
    #: `_iteration_clock`).
    iteration: dict[str, int] = field(default_factory=dict)

    #: DMA queues its instances rotate over: instance n (counted over the whole run) runs on
    #: `dma((first + n * stride) mod queues)`, `queue` being `dma<first>`; 1: every instance
    #: on `queue`.
    queues: int = 1
    stride: int = 1
    #: When the unrolled loops' DMA counts differ by level (a store after an inner loop of
    #: loads): the queue of the instance at loop values v is `(first + steps(v)) mod queues`
    #: instead, `steps` affine in the enclosing loop variables.
    steps: Affine | None = None

    #: Whether it runs at all (every enclosing loop has an iteration).
    runs: bool = field(init=False)
    #: The in-order stream the analysis may rely on: `queue`, or one of its own for a rotating
    #: DMA (its instances share no single queue with other instructions; among themselves
    #: they complete in order for a waiter, docs/neff-format.md `queues`).
    lane: str = field(init=False)

    def __post_init__(self) -> None:
        self.runs = all(lp.trip_count > 0 for lp in self.loops)
        self.lane = self.queue

    def rotate(self, queues: int, stride: int) -> None:
        """Run instance n on `dma((first + n * stride) mod queues)`."""
        self.queues, self.stride = queues, stride
        self.lane = f"{self.queue}@{self.id}"

    def queue_of(self, n: int) -> str:
        """The queue of instance n."""
        if self.queues == 1:
            return self.queue
        if self.steps is not None:
            step = self.steps.evaluate(_iteration(self.loops, n))
            return f"dma{(int(self.queue[3:]) + step) % self.queues}"
        return f"dma{(int(self.queue[3:]) + n * self.stride) % self.queues}"

    def __hash__(self) -> int:
        return self.id


@dataclass
class Schedule:
    """Every instruction of a kernel, in program order, with queues and waits."""

    kernel: Kernel
    insts: list[Scheduled]
    by_inst: dict[Inst, Scheduled]


def _common(a: tuple[Loop, ...], b: tuple[Loop, ...]) -> tuple[Loop, ...]:
    n = 0
    for x, y in zip(a, b):
        if x is not y:
            break
        n += 1
    return a[:n]


def _boxes_meet(a: Access, b: Access) -> bool:
    (ap0, ap1, ab0, ab1), (bp0, bp1, bb0, bb1) = a.box, b.box
    return ap0 <= bp1 and bp0 <= ap1 and ab0 <= bb1 and bb0 <= ab1


def _pair_skip(c: Scheduled, a: Access, p: Scheduled, b: Access) -> Skip | None:
    """The skip of the wait `c` needs on `p` for accesses a (of c) and b (of p), or None.

    The latest conflict lies in the same iteration of every common loop, or one iteration
    of the innermost common loop that may carry it earlier, or, for a multi-buffered tensor,
    `count` executions of its rotation loop's body earlier (the slots in between differ).
    The skip names exactly that instance when it is affine in c's loop variables
    (`exact_skip`); otherwise the newest instance of the block it lies in."""
    common = _common(c.loops, p.loops)
    same = a.tensor is b.tensor
    turns = None if same else _turns(a.tensor, b.tensor, common)
    if turns == 0:  # the same slot in every execution: as one tensor
        same, turns = True, None
    ra, rb = (a.region, b.region) if same or turns else (a.widened, b.widened)
    if a.rows and b.rows and a.rows[0] == b.rows[0]:
        ra, rb = a.rows[1], b.rows[1]
    first = p.pos < c.pos
    if not c.loops and not p.loops:  # one instance each: the wait is for p's only one
        return 0 if instances_may_overlap(ra, (), rb, (), ()) else None
    if not same and first and not common:
        shared = _shared_slots(c, a, p, b)
        if shared is not None:
            return shared

    def exact(carry: int, distance: int, merged: bool) -> Skip | None:
        return exact_skip(ra, c.loops, rb, p.loops, carry, distance, merged, first)

    if turns:
        # c's execution n of the rotation loop's body is in p's slot of execution n − turns,
        # never in the slot p uses in the same execution
        var = a.tensor.rotate[0]
        rot_index = next(i for i, lp in enumerate(common) if lp.var == var)
        if not any(
            instances_may_overlap(ra, c.loops, rb, p.loops, common[:j], common[j])
            for j in range(rot_index + 1)
        ):
            return None
        per_body = 1
        for inner in p.loops[rot_index + 1 :]:
            per_body *= inner.trip_count
        return _best(exact(rot_index, turns, True), (turns - 1) * per_body)
    if first and instances_may_overlap(ra, c.loops, rb, p.loops, common, None):
        if not p.loops:
            later = _from_first_conflict(c, ra, rb)
            if later is not None:
                return later
        return _best(exact(len(common), 0, False), 0)
    rot_index, count = -1, 1
    if same and a.tensor.rotate is not None:
        var, count = a.tensor.rotate[:2]
        rot_index = next((i for i, lp in enumerate(common) if lp.var == var), -1)
    for j in range(len(common) - 1, rot_index, -1):
        if instances_may_overlap(ra, c.loops, rb, p.loops, common[:j], common[j]):
            return _best(exact(j, 1, False), 0)
    if any(
        instances_may_overlap(ra, c.loops, rb, p.loops, common[:j], common[j])
        for j in range(rot_index + 1)
    ):
        # the slot is reused only `count` executions of the rotation loop's body later
        per_body = 1
        for inner in p.loops[rot_index + 1 :]:
            per_body *= inner.trip_count
        return _best(exact(rot_index, count, True), (count - 1) * per_body)
    return None


def _turns(ta: Tensor, tb: Tensor, common: tuple[Loop, ...]) -> int | None:
    """For two tensors taking turns in the slots of one rotation inside a loop c and p share
    (the tiles of one site that one execution of a symbolic loop's body allocates, when the
    slot count divides their number less one: `allocate`): how many executions of the
    rotation loop's body lie between c's use of a slot and p's latest use of it before,
    modulo the slot count (0: the same slot in every execution). None: not such a pair.

    Execution n puts ta in slot (n + phase_a) mod count and tb in (n + phase_b) mod count,
    so tb held ta's slot of execution n in execution n − (phase_b − phase_a) mod count."""
    if ta.rotate is None or tb.rotate is None or ta.address != tb.address:
        return None
    (va, count, stride, phase_a), (vb, count_b, stride_b, phase_b) = ta.rotate, tb.rotate
    if (va, count, stride) != (vb, count_b, stride_b) or not any(lp.var == va for lp in common):
        return None
    if max(ta.bytes_per_partition, tb.bytes_per_partition) > stride:
        return None  # (slots overlap)
    return (phase_b - phase_a) % count


def _shared_slots(c: Scheduled, a: Access, p: Scheduled, b: Access) -> Clamped | None:
    """The skip for two tensors rotating over the same slots in loops one after the other
    (one site's tiles in sibling symbolic loops, as the allocator chains them), or None.

    Each of c and p is in the body of its tensor's rotation loop (or in loops inside it), so
    execution n of that body uses slot (n + phase) mod count; p's loop has run every one of
    its E executions, the last in slot (E − 1 + phase_p) mod count, so with d = (E + phase_p
    − phase_c) mod count (count when that is 0: c takes up the rotation where p left it) the
    newest instance of p in the slot of c's execution n is the last of p's execution
    E − d + n, (d − 1 − n)·per instances back (p issues `per` instances per execution), for
    c's first d executions. Later executions of c follow executions of c that waited in
    that slot, or use a slot p's last d executions did not: the newest instance of p (skip
    0) is exact enough. Unrolled, each tile waits for exactly the tile that used its slot
    last; a skip of 0 throughout would wait for p's newest tile, in another slot."""
    ta, tb = a.tensor, b.tensor
    if not (c.loops and p.loops) or ta.rotate is None or tb.rotate is None:
        return None
    if ta.address != tb.address:
        return None
    (va, count, stride, phase), (vb, count_b, stride_b, phase_b) = ta.rotate, tb.rotate
    if (count, stride) != (count_b, stride_b):
        return None
    if max(ta.bytes_per_partition, tb.bytes_per_partition) > stride:
        return None  # (slots overlap)
    ic = next((i for i, lp in enumerate(c.loops) if lp.var == va), None)
    ip = next((i for i, lp in enumerate(p.loops) if lp.var == vb), None)
    if ic is None or ip is None:
        return None
    executions = per = 1
    for lp in p.loops[: ip + 1]:
        executions *= lp.trip_count
    for lp in p.loops[ip + 1 :]:
        per *= lp.trip_count
    d = (executions + phase_b - phase) % count or count
    # the execution number n of c's rotation loop body, affine in its loop variables
    # (integer coefficients only)
    n, inner = Affine(0), 1
    for lp in reversed(c.loops[: ic + 1]):
        if inner % lp.step:
            return None
        n = n + (Affine.var(lp.var) - lp.start) * (inner // lp.step)
        inner *= lp.trip_count
    return Clamped((Affine(d - 1) - n) * per)


#: Iterations of a loop up to which `_from_first_conflict` looks for the first that conflicts.
FIRST_CONFLICT_LIMIT = 64


def _from_first_conflict(c: Scheduled, ra: Region, rb: Region) -> Clamped | None:
    """For a loop-free producer p (region rb) that c's instances (region ra) first conflict
    with at c's instance k > 0: `max(0, k − n)` at c's instance n. Before instance k the skip
    names an instance of p before its only one, so there is nothing to wait for; from k on it
    is p's instance. Unrolled, the instructions of the iterations before k do not wait for p
    either. None: the first instance conflicts, the loops are longer than
    FIRST_CONFLICT_LIMIT iterations or their steps do not give an integer instance number."""
    total = 1
    for lp in c.loops:
        total *= lp.trip_count
    if total > FIRST_CONFLICT_LIMIT or not (ra.part.terms or ra.free.terms):
        return None
    k = 0
    while k < total:
        env = _iteration(c.loops, k)
        at = Region(
            Affine(ra.part.evaluate(env)),
            ra.part_lo,
            ra.part_hi,
            Affine(ra.free.evaluate(env)),
            ra.free_lo,
            ra.free_hi,
            ra.itemsize,
        )
        if instances_may_overlap(at, (), rb, (), ()):
            break
        k += 1
    if k == 0 or k == total:
        return None
    n, inner = Affine(0), 1
    for lp in reversed(c.loops):
        if inner % lp.step:
            return None
        n = n + (Affine.var(lp.var) - lp.start) * (inner // lp.step)
        inner *= lp.trip_count
    return Clamped(Affine(k) - n)


def _best(exact: Skip | None, conservative: int) -> Skip:
    """The exact skip if known, else the conservative one; the larger when both are ints."""
    if exact is None:
        return conservative
    if isinstance(exact, int):
        return max(exact, conservative)
    return exact


def _min_skip(x: Skip, y: Skip, c: Scheduled) -> Skip:
    """A skip no larger than either, at every iteration of c (both are safe)."""
    if isinstance(x, int) and isinstance(y, int):
        return min(x, y)
    ranges = loop_ranges(c.loops)
    if isinstance(x, Clamped) or isinstance(y, Clamped):
        if x == y:
            return x

        def low(s: Skip) -> int:
            if isinstance(s, int):
                return s
            return max(0, (s.expr if isinstance(s, Clamped) else s).bounds(ranges)[0])

        return min(low(x), low(y))
    lo, hi = (Affine.of(x) - Affine.of(y)).bounds(ranges)
    if lo >= 0:
        return y
    if hi <= 0:
        return x
    return max(0, min(Affine.of(x).bounds(ranges)[0], Affine.of(y).bounds(ranges)[0]))


@without_gc
def schedule_once(kernel: Kernel) -> Schedule:
    """`schedule(kernel)`, computed once: the neff writer, the assembly listing and the
    resource report each ask for the schedule of the same final program. It is computed again
    when the program changed since (other ops, operands, engines, loop bounds or placements)."""
    key, objects = _fingerprint(kernel)
    memo = kernel.__dict__.get("_schedule_memo")
    if memo is not None and memo[0] == key:
        return memo[1]
    result = schedule(kernel)
    # the objects whose ids the key holds stay alive with it, so no new object takes an id
    kernel.__dict__["_schedule_memo"] = (key, result, objects)
    return result


def _fingerprint(kernel: Kernel) -> tuple[tuple, list]:
    """What the schedule of `kernel` depends on, by identity where objects are replaced
    rather than changed (instructions, their operands, loops) and by value where passes set
    fields (engines, addresses, rotations, loop bounds); and the objects identified."""
    objects: list = [kernel.body, *kernel.params]
    parts: list = [kernel.target]
    for op, _ in kernel.walk():
        objects.append(op)
        if isinstance(op, Inst):
            operands = list(op.operands.values())
            objects += operands
            parts.append((op.engine, tuple(map(id, operands))))
            parts.extend((ap.tensor.address, ap.tensor.rotate) for _, ap in op.aps())
        elif isinstance(op, Loop):
            objects.append(op.body)
            parts.append((op.start, op.stop, op.step, id(op.body)))
    return (*map(id, objects), *parts), objects


def schedule(kernel: Kernel) -> Schedule:
    """Assign queues (DMA round-robin over the target's queues; the instances of a DMA in a
    loop rotate over them as the unrolled loop's would) and compute every wait.

    A dynamic loop (`DynLoop`) splits the program into blocks: the code before it, its body,
    the code after it. Every queue joins the others at the loop's entry, after each iteration
    and at its exit (the runtime's barrier, docs/neff-format.md), so each block is scheduled
    on its own, for any trip count, zero included (and its DMAs do not rotate: an iteration
    issues the same instances on the same queues)."""
    if not kernel.has_dynamic_loops():
        return _schedule_block(kernel)
    insts: list[Scheduled] = []
    by_inst: dict[Inst, Scheduled] = {}

    def flush(block: list[Op]) -> None:
        if not block:
            return
        part = _schedule_block(
            Kernel(kernel.name, kernel.target, list(kernel.params), block), rotate=False
        )
        offset = len(insts)
        for s in part.insts:
            s.id += offset
            s.waits = [(pid + offset, skip) for pid, skip in s.waits]
            insts.append(s)
            by_inst[s.inst] = s

    def split(ops: list[Op]) -> None:
        block: list[Op] = []
        for op in ops:
            if isinstance(op, DynLoop):
                flush(block)
                block = []
                split(op.body)
            else:
                block.append(op)
        flush(block)

    split(kernel.body)
    return Schedule(kernel, insts, by_inst)


def _schedule_block(kernel: Kernel, rotate: bool = True) -> Schedule:
    """`schedule` for a program without dynamic loops."""
    tgt = target(kernel.target)
    insts: list[Scheduled] = []
    starts: dict[Loop, int] = {}
    dma = 0
    fixed: dict[tuple, tuple[Access, Access]] = {}
    placed: dict[tuple, tuple] = {}
    for pos, (op, loops) in enumerate(kernel.walk()):
        if isinstance(op, Loop):
            starts[op] = pos
        if not isinstance(op, Inst):
            continue
        engine = op.engine or choose_engine(op)
        if engine == "dma":
            queue = f"dma{dma % tgt.dma_queues}"
            dma += 1
        else:
            queue = engine
        accesses = _accesses(op, loops, fixed, placed)
        insts.append(Scheduled(op, len(insts), engine, queue, loops, pos, accesses))
    self_waits: dict[Scheduled, Skip] = {}
    if rotate:
        # DMA instances per iteration of each loop: unrolled, they take consecutive queues
        per_iteration: dict[Loop, int] = {}
        for s in insts:
            if s.engine == "dma":
                n = 1
                for lp in reversed(s.loops):
                    per_iteration[lp] = per_iteration.get(lp, 0) + n
                    n *= lp.trip_count
        _unrolled_queues(insts, per_iteration, tgt.dma_queues)
        for s in insts:
            if s.engine == "dma" and s.runs and s.loops:
                stride = per_iteration[s.loops[-1]] % tgt.dma_queues
                steps = _queue_steps(s, per_iteration, stride, tgt.dma_queues)
                if stride or steps is not None:
                    _rotate(s, tgt.dma_queues, stride, self_waits)
                    if s.queues > 1:
                        s.steps = steps
    ends: dict[Loop, int] = {}
    index = _Index({a.key for s in insts for a in s.accesses if a.write})
    for s in insts:
        for lp in s.loops:
            ends[lp] = s.id
        index.add(s)
    previous: dict[str, Scheduled] = {}  # the newest instruction that runs on each queue
    for c in insts:
        if not c.runs:
            continue
        prev = previous.get(c.lane)
        if prev is None:
            every = final = {}
        else:
            every, final = (prev.clock, prev.final) if c.loops else (prev.final, prev.final)
        waits = _waits(c, insts, ends, index, every)
        if c.loops:
            same = prev.iteration if prev is not None and prev.loops == c.loops else {}
            waits = {p: k for p, k in waits.items() if not _in_iteration(p, k, c, same)}
            c.waits = _reduce_in_loop(c, waits, starts, insts)
            c.iteration = _iteration_clock(c, same, insts)
        else:
            c.waits = _reduce(waits, every)
        c.clock, c.final = _clocks(c, every, final, insts)
        previous[c.lane] = c
    # (a wait of an instruction on itself informs no other wait: added once all are known)
    for c, skip in self_waits.items():
        if not _implied_self_wait(c, skip, insts):
            c.waits = sorted([*c.waits, (c.id, skip)], key=lambda w: w[0])
    return Schedule(kernel, insts, {s.inst: s for s in insts})


def _unrolled_queues(insts: list[Scheduled], per_iteration: dict[Loop, int], queues: int) -> None:
    """Give each DMA the queue the first instance would take in the unrolled program: the
    round-robin counts every instance of the loops before it, not each DMA once, so that the
    DMAs after a loop take the same queues whether it is unrolled or not."""
    n, open_loops = 0, ()
    for s in insts:
        if s.engine != "dma":
            continue
        for lp in reversed(open_loops):  # loops left since the previous DMA, innermost first
            if lp not in s.loops:
                n += per_iteration[lp] * (lp.trip_count - 1)
        s.queue = s.lane = f"dma{n % queues}"
        n += 1
        open_loops = s.loops


def _queue_steps(
    s: Scheduled, per_iteration: dict[Loop, int], stride: int, queues: int
) -> Affine | None:
    """The queue offset of each instance of DMA `s` as unrolling assigns it, affine in its
    loop variables, when `n * stride` (n counting its instances) is not that: an iteration
    of loop l moves the round-robin on by `per_iteration[l]` queues, which is `stride` times
    the instances of the loops inside l only when l holds no other DMA. None: the stride
    is exact, or a loop's step does not divide its offset."""
    exact, inner = True, 1
    for lp in reversed(s.loops):
        if (per_iteration[lp] - stride * inner) % queues:
            exact = False
        inner *= lp.trip_count
    if exact:
        return None
    steps = Affine(0)
    for lp in s.loops:
        k = per_iteration[lp] % queues
        if k % lp.step:
            return None
        steps = steps + (Affine.var(lp.var) - lp.start) * (k // lp.step)
    return steps


def _rotate(c: Scheduled, queues: int, stride: int, self_waits: dict[Scheduled, Skip]) -> None:
    """Spread the instances of a DMA in a loop over the DMA queues as unrolling the loop
    would: one iteration's DMAs take consecutive queues, the next iteration's the queues after
    them (`stride`: the DMA instances of one iteration of its innermost loop). On one queue
    each transfer's fixed cost delays the next one's start, on several they overlap.
    Instances that conflict with each other (a slot or row rewritten) are then ordered by a
    wait of the instruction on itself (`self_waits`), `skip` instances back, dropped where a
    chain of other waits orders them (`_implied_self_wait`), as the unrolled DMAs are: a
    load into one tile in every iteration waits for the previous iteration's store from it,
    which waited for the previous load. Kept on one queue instead, such a DMA's instances
    would wait in line and hold up every later DMA the round-robin gives that queue. A
    waiter sees a rotating DMA's instances complete in order (docs/neff-format.md
    `queues`)."""
    instances = 1
    for lp in c.loops:
        instances *= lp.trip_count
    if instances < 2:
        return
    skip = _dependency(c, c)
    # (instance n's wait names instance n − 1 − skip: at most `instances − 2` back)
    if skip is not None and (not isinstance(skip, int) or skip < instances - 1):
        if isinstance(skip, Affine) and skip.bounds(loop_ranges(c.loops))[0] < 0:
            return  # (no instance to name in some iteration: one queue orders them)
        self_waits[c] = skip
    c.rotate(queues, stride)


#: Instances of a self-conflicting DMA up to which `_implied_self_wait` looks for a chain of
#: waits instance by instance (beyond it the wait on itself is kept: safe, maybe redundant).
SELF_WAIT_CHECK_LIMIT = 1 << 14


def _implied_self_wait(c: Scheduled, skip: Skip, insts: list[Scheduled]) -> bool:
    """Is each instance n of c ordered after its instance n − 1 − skip by a wait on an
    instruction p that itself waits on c (a tile slot's reader between two loads into it)?

    Instances are counted over the loops: with F the flattened iteration of the loops c and p
    share, c's instances of F are F·per_c … F·per_c + per_c − 1, and p's likewise. A waiter
    sees c's instances complete in order, so reaching a later one is enough."""
    if not isinstance(skip, int):
        return False
    total = 1
    for lp in c.loops:
        total *= lp.trip_count
    if total > SELF_WAIT_CHECK_LIMIT:
        return False
    chains = []
    for pid, to_p in c.waits:
        p = insts[pid]
        back = next((k for q, k in p.waits if q == c.id), None)
        common = len(_common(c.loops, p.loops))
        if back is None or not common:
            continue
        per_c = per_p = 1
        for lp in c.loops[common:]:
            per_c *= lp.trip_count
        for lp in p.loops[common:]:
            per_p *= lp.trip_count
        chains.append((p, to_p, back, per_c, per_p))
    if not chains:
        return False
    for n in range(skip + 1, total):
        env = _iteration(c.loops, n)
        for p, to_p, back, per_c, per_p in chains:
            f = n // per_c
            # p's newest instance when c's instance n starts, and the one c waits for
            target = f * per_p + (per_p - 1 if p.pos < c.pos else -1) - _value(to_p, env)
            if target < 0:
                continue
            # c's newest instance when that p instance starts, and the one it waits for
            reached = (target // per_p) * per_c + (per_c - 1 if c.pos < p.pos else -1)
            if reached - _value(back, _iteration(p.loops, target)) >= n - 1 - skip:
                break
        else:
            return False
    return True


def _value(skip: Skip, env: dict[str, int]) -> int:
    return skip if isinstance(skip, int) else skip.evaluate(env)


def _iteration(loops: tuple[Loop, ...], n: int) -> dict[str, int]:
    """The loop variables of instance n of an instruction in `loops` (outermost first)."""
    env = {}
    for lp in reversed(loops):
        n, i = divmod(n, lp.trip_count)
        env[lp.var] = lp.start + i * lp.step
    return env


def _join(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for q, i in b.items():
        if i > out.get(q, -1):
            out[q] = i
    return out


def _join_after(a: dict[str, int], p: Scheduled) -> dict[str, int]:
    """`a` joined with what has completed once the last instance of `p` has: `p`'s queue up
    to `p`, and what was complete before that instance started (`p.final`). `a` itself when
    that adds nothing (clocks are never changed in place: instructions share them)."""
    # one pass over p.final, copying `a` at the first queue it raises; p.final names each
    # queue once, so comparing with `a` is comparing with `out`
    get = a.get
    out = a
    for q, i in p.final.items():
        if i > get(q, -1):
            if out is a:
                out = dict(a)
            out[q] = i
    if p.id > out.get(p.lane, -1):
        if out is a:
            out = dict(a)
        out[p.lane] = p.id
    return out


def _known_after(p: Scheduled, lane: str) -> int:
    """The newest instruction of `lane` known complete once the last instance of `p` has
    (-1: none); see `_join_after`."""
    known = p.final.get(lane, -1)
    return p.id if lane == p.lane and p.id > known else known


def _clocks(
    c: Scheduled, every: dict[str, int], final: dict[str, int], insts: list[Scheduled]
) -> tuple[dict[str, int], dict[str, int]]:
    """What has completed before every instance of `c` starts, and before its last one does.

    A queue issues in order, so both start from what its previous instruction knew. A skip-0
    wait on an earlier producer adds what the producer's last instance completed: at c's last
    instance that is the producer's last instance; at every instance of c only when c is in
    no loop of the producer's (the producer's loop has finished before c starts)."""
    # outside loops both start equal and grow alike: compute them once
    alike = every is final and not c.loops
    for pid, skip in c.waits:
        p = insts[pid]
        if skip != 0 or p.pos > c.pos:
            continue
        final = _join_after(final, p)
        if alike:
            every = final
        elif not _common(c.loops, p.loops):
            every = _join_after(every, p)
    return every, final


def _reduce(waits: dict[Scheduled, Skip], base: dict[str, int]) -> list[tuple[int, Skip]]:
    """For a consumer outside every loop, keep exactly the waits not implied by the others:
    a producer is implied when the queue's previous instruction already knew it complete
    (`base`), or when another producer waited for (an instruction at or after) it on its queue,
    directly or through a chain of waits."""
    live = {p: skip for p, skip in waits.items() if base.get(p.lane, -1) < p.id}
    after = [p for p, skip in live.items() if skip == 0]
    return sorted(
        (p.id, skip)
        for p, skip in live.items()
        if not any(q is not p and _known_after(q, p.lane) >= p.id for q in after)
    )


def _in_iteration(p: Scheduled, skip: Skip, c: Scheduled, same: dict[str, int]) -> bool:
    """Is c's wait for p's instance of the same iteration implied by an earlier instruction
    of c's queue in the same loop body (`same`: what it knew complete in that iteration)?"""
    return skip == 0 and p.loops == c.loops and p.pos < c.pos and same.get(p.lane, -1) >= p.id


def _iteration_clock(c: Scheduled, same: dict[str, int], insts: list[Scheduled]) -> dict[str, int]:
    """For each queue, the newest instruction of c's loop body whose instance of an iteration
    has completed before c's instance of that iteration starts: through c's skip-0 waits on
    earlier instructions of the same body, and what the previous instruction of c's queue in
    that body knew."""
    clock = dict(same)
    for pid, skip in c.waits:
        p = insts[pid]
        if skip == 0 and p.loops == c.loops and p.pos < c.pos:
            clock = _join(clock, {**p.iteration, p.lane: max(p.id, p.iteration.get(p.lane, -1))})
    return clock


def _reduce_in_loop(
    c: Scheduled, waits: dict[Scheduled, Skip], starts: dict[Loop, int], insts: list[Scheduled]
) -> list[tuple[int, Skip]]:
    """For a consumer in a loop, drop waits implied by others: by a newer instruction on the
    same producer queue, or by a producer that itself waited for the dropped one."""
    by_queue: dict[str, list[Scheduled]] = {}
    for p in waits:
        by_queue.setdefault(p.lane, []).append(p)
    kept = []
    for ps in by_queue.values():
        before = [p for p in ps if p.pos < c.pos and waits[p] == 0]
        dom = max(before, key=lambda p: p.pos) if before else None
        for p in ps:
            if dom is None or p is dom:
                kept.append(p)
            elif p.pos < dom.pos:
                continue  # dom is issued after p's latest instance, on the same queue
            elif p.pos < c.pos:
                kept.append(p)
            else:
                common = _common(c.loops, p.loops)
                if not (common and dom.pos > starts[common[-1]]):
                    kept.append(p)
    # Everything issued between a producer P's latest instance and c comes after P in program
    # order, so when P (before c) waited with skip 0 on an instruction at or after R on R's
    # queue, R's latest instance has completed once P has.
    covered = set()
    for p in kept:
        if p.pos > c.pos or waits[p] != 0:
            continue
        for pid, skip in p.waits:
            q = insts[pid]
            if skip == 0 and q.pos < p.pos:
                covered.update(
                    r
                    for r in kept
                    if r is not p and r.lane == q.lane and r.pos <= q.pos and waits[r] == 0
                )
    return sorted((p.id, waits[p]) for p in kept if p not in covered)


def _dependency(c: Scheduled, p: Scheduled) -> Skip | None:
    """The smallest skip over every conflicting pair of accesses of c and p, or None."""
    best = None
    for a in c.accesses:
        for b in p.accesses:
            if a.key != b.key or not (a.write or b.write) or not _boxes_meet(a, b):
                continue
            skip = _pair_skip(c, a, p, b)
            if skip is not None:
                best = skip if best is None else _min_skip(best, skip, c)
                if best == 0:
                    return 0
    return best


def _waits(
    c: Scheduled,
    insts: list[Scheduled],
    ends: dict[Loop, int],
    index: _Index,
    base: dict[str, int],
) -> dict[Scheduled, Skip]:
    """Every producer c must wait for, with its skip. The producers that may conflict come
    from the index; earlier ones are examined newest first: once one on a queue needs a
    skip-0 wait, older ones on that queue are implied, and so is anything the queue's
    previous instruction already knew complete (`base`, for a consumer outside loops)."""
    waits: dict[Scheduled, Skip] = {}
    settled: set[str] = set()
    last = ends[c.loops[0]] if c.loops else c.id
    earlier, later = index.candidates(c, last, base)
    for p in sorted(earlier, key=_newest_first):
        if p.lane == c.lane or p.lane in settled or not p.runs:
            continue
        if base.get(p.lane, -1) >= p.id:
            continue
        skip = _dependency(c, p)
        if skip is not None and _exists(skip, c, p):
            waits[p] = skip
            if skip == 0:
                settled.add(p.lane)
    # later instructions precede c only through a loop they share with c
    for p in sorted(later, key=_oldest_first):
        if p.lane != c.lane and p.runs:
            skip = _dependency(c, p)
            if skip is not None and _exists(skip, c, p):
                waits[p] = skip
    return waits


def _exists(skip: Skip, c: Scheduled, p: Scheduled) -> bool:
    """May the producer instance the wait names exist? Not when a constant skip reaches past
    every instance of p issued before c's last instance (e.g. a slot of a multi-buffered tile
    that the loop never comes back to)."""
    if not isinstance(skip, int):
        return True
    if p.pos > c.pos:
        return skip < _before_last(c, p)
    issued = 1
    for lp in p.loops:
        issued *= lp.trip_count
    return skip < issued


def _before_last(c: Scheduled, p: Scheduled) -> int:
    """How many instances of a later producer p are issued before c's last instance."""
    per_iteration = 1
    for lp in p.loops[len(_common(c.loops, p.loops)) :]:
        per_iteration *= lp.trip_count
    total = per_iteration
    for lp in _common(c.loops, p.loops):
        total *= lp.trip_count
    return total - per_iteration


def _newest_first(s: Scheduled) -> int:
    return -s.id


def _oldest_first(s: Scheduled) -> int:
    return s.id


#: Bytes per bucket of the access index, at least; a memory has at most MAX_BUCKETS.
BUCKET_BYTES = 2048
MAX_BUCKETS = 128
#: Sub-buckets per bucket: an access touching at most SUB_SPAN of them is also listed in
#: each, for the look-backs of accesses within one sub-bucket.
SUB_BUCKETS = 16
SUB_SPAN = 4
#: Buckets from which an inexact access is kept once, not in each bucket (see `_Index`).
WIDE_SPAN = 16


def target_bytes(buffer: str) -> int:
    """The largest partition of an on-chip buffer over the targets."""
    return 256 * 1024 if buffer == "sbuf" else 16 * 1024


class _Index:
    """Every access of the kernel by memory and bucket of bytes, in program order, so that a
    consumer examines only producers that touch the same bytes: the total work for unrolled
    code grows with its size, not with its square.

    Looking back from a consumer, a dense loop-free write that covers the consumer's bytes in
    a bucket hides what came before it there: an older access that conflicts with the
    consumer in that bucket conflicts with the write too, so it completed before the write
    started (or, on the write's queue, before the write completed), and the consumer's wait
    for the write orders it. Likewise a covering read hides older reads of its own queue from
    a writer: they complete before it does. Memory that nothing writes (`written` holds the
    keys of what is written) has no conflicts and is left out.

    Wide accesses cost the same whatever the number of buckets they span:
    * an inexact access (it neither hides nor stops anything) spanning WIDE_SPAN buckets or
      more, or every bucket of its memory, is kept once per range of buckets and lane, not in
      each bucket (`wide`); a consumer finds it when the look-back of one of the buckets they
      share reaches it;
    * consecutive buckets that list the same accesses form a run (`_runs`): every access
      listed there spans the whole run, so the look-back gives the same answer in each bucket
      strictly inside it that a consumer covers whole; a consumer looks back in the first, the
      last and one inner bucket of each run it meets."""

    def __init__(self, written: set[tuple]) -> None:
        self.written = written
        # (key, bucket) -> (write ids, writes, read ids, reads), each in program order, then
        # for the writes and for the reads: sub-bucket -> positions (in those lists) of the
        # accesses touching at most SUB_SPAN sub-buckets, and the positions of the others
        self.buckets: dict[tuple, tuple] = {}
        # instruction id -> for each of its accesses, (first bucket, last bucket, first byte,
        # last byte) (`_span`), None for memory nothing writes
        self.spans: dict[int, list[tuple[int, int, int, int] | None]] = {}
        # key -> (first bucket, last bucket) -> lane -> the same four lists for the wide
        # inexact accesses of those buckets (a dynamic access counts as touching its whole
        # tensor): kept once, not in each bucket, examined once per consumer access
        self.wide: dict[tuple, dict[tuple[int, int], dict[str, tuple[list, list, list, list]]]]
        self.wide = {}
        # key -> buckets with lists; key -> (first buckets, last buckets) of its runs
        self.present: dict[tuple, set[int]] = {}
        # key -> ids of the instructions listed in its buckets, ascending
        self.key_ids: dict[tuple, list[int]] = {}
        self.runs: dict[tuple, tuple[list[int], list[int]]] = {}
        # lane -> ids of its instructions, ascending; for `_horizon`, once all are added:
        # consumer lane -> heap of (first instruction not known complete, its lane)
        self.lanes: dict[str, list[int]] = {}
        self.heaps: dict[str, list[tuple[int, str]]] = {}
        # key -> (bytes of its memory, bytes per bucket)
        self.memories: dict[tuple, tuple[int, int]] = {}

    def _memory(self, a: Access) -> tuple[int, int]:
        """Bytes of the memory the key names (an HBM tensor; an on-chip partition) and of
        each of its buckets."""
        found = self.memories.get(a.key)
        if found is None:
            if a.key[0] == "tensor":
                extent = a.tensor.size * a.tensor.itemsize
            else:
                extent = target_bytes(a.key[0])
            found = self.memories[a.key] = (extent, max(BUCKET_BYTES, -(-extent // MAX_BUCKETS)))
        return found

    def _span(self, a: Access) -> tuple[int, int, int, int]:
        """(first bucket, last bucket, first byte, last byte) of the access's box; at most
        MAX_BUCKETS + 1 buckets per memory (bytes past its end count as its last one)."""
        extent, size = self._memory(a)
        _, _, lo, hi = a.box
        lo, hi = min(max(lo, 0), extent), min(max(hi, 0), extent)
        return lo // size, hi // size, lo, hi

    def add(self, s: Scheduled) -> None:
        self.lanes.setdefault(s.lane, []).append(s.id)
        spans = self.spans[s.id] = [
            self._span(a) if a.key in self.written else None for a in s.accesses
        ]
        for a, span in zip(s.accesses, spans):
            if span is None:
                continue
            first, last, lo, hi = span
            at = 0 if a.write else 2
            if self._is_wide(a, first, last):
                by_queue = self.wide.setdefault(a.key, {}).setdefault((first, last), {})
                lists = by_queue.get(s.lane)
                if lists is None:
                    lists = by_queue[s.lane] = ([], [], [], [])
                lists[at].append(s.id)
                lists[at + 1].append((s, a))
                continue
            self.runs.pop(a.key, None)
            ids = self.key_ids.get(a.key)
            if ids is None:
                self.key_ids[a.key] = [s.id]
            elif ids[-1] != s.id:
                ids.append(s.id)
            present = self.present.setdefault(a.key, set())
            size = self._memory(a)[1]
            sub = size // SUB_BUCKETS
            for b in range(first, last + 1):
                blo = lo if b == first else b * size
                bhi = hi if b == last else b * size + size - 1
                lists = self.buckets.get((a.key, b))
                if lists is None:
                    lists = self.buckets[(a.key, b)] = ([], [], [], [], {}, [], {}, [])
                    present.add(b)
                j = len(lists[at])
                lists[at].append(s.id)
                lists[at + 1].append((s, a))
                first_sub, last_sub = blo // sub, bhi // sub
                if last_sub - first_sub < SUB_SPAN:
                    subs = lists[at + 4]
                    for k in range(first_sub, last_sub + 1):
                        found = subs.get(k)
                        if found is None:
                            subs[k] = [j]
                        else:
                            found.append(j)
                else:
                    lists[at + 5].append(j)

    def _runs(self, key: tuple) -> tuple[list[int], list[int]]:
        """The first and the last buckets of the runs of `key`'s buckets: consecutive
        buckets listing the same accesses, in the same order."""
        found = self.runs.get(key)
        if found is None:
            firsts: list[int] = []
            lasts: list[int] = []
            prev = None
            for b in sorted(self.present.get(key, ())):
                lists = self.buckets[(key, b)]
                if (
                    prev is not None
                    and b == lasts[-1] + 1
                    and prev[0] == lists[0]
                    and prev[2] == lists[2]
                    and prev[1] == lists[1]
                    and prev[3] == lists[3]
                ):
                    lasts[-1] = b
                else:
                    firsts.append(b)
                    lasts.append(b)
                prev = lists
            found = self.runs[key] = (firsts, lasts)
        return found

    def candidates(
        self, c: Scheduled, last: int, base: dict[str, int]
    ) -> tuple[set[Scheduled], set[Scheduled]]:
        """The instructions before c that may conflict with it and are not hidden, and those
        after it, up to id `last`, that may conflict with it. Of the accesses in every
        bucket, those `_waits` passes over are left out: on c's queue, and before c up to
        `base` (the newest instruction of each queue known complete)."""
        earlier: set[Scheduled] = set()
        later: set[Scheduled] = set()
        horizon = self._horizon(c, base)
        for a, span in zip(c.accesses, self.spans[c.id]):
            if span is None:  # memory nothing writes
                continue
            first, end, lo, hi = span
            # per range of buckets: where the look-back stopped, and the queues hidden from
            # there on (the same in each of its buckets)
            seen: list[tuple[int, int, int, dict[str, int]]] = []
            size = self._memory(a)[1]
            small = None
            if first == end:
                # an access within one sub-bucket meets only what touches that sub-bucket:
                # the look-backs skip the rest (which would not meet it) in the same order
                sub = size // SUB_BUCKETS
                if lo <= a.box[2] and a.box[3] <= hi and lo // sub == hi // sub:
                    small = lo // sub
                pieces = [(first, first)]
            elif self._quiet(a.key, horizon, c.id, last):
                # nothing listed in its buckets to look at: each look-back would stop at once
                pieces = []
                seen.append((first, end, horizon, {}))
            else:
                pieces = self._pieces(a.key, first, end)
            for b1, b2 in pieces:
                lists = self.buckets.get((a.key, b1))
                if lists is None:  # buckets that list nothing
                    seen.append((b1, b2, -1, {}))
                    continue
                blo, bhi = max(lo, b1 * size), min(hi, b1 * size + size - 1)
                stop, hidden = _look_back(
                    a, lists, blo, bhi, small, c.id, horizon, last, earlier, later
                )
                seen.append((b1, b2, stop, hidden))
            for (low_b, high_b), by_queue in self.wide.get(a.key, {}).items():
                # the buckets where the look-back would have met them
                shared = [
                    (stop, hidden) for b1, b2, stop, hidden in seen if b1 <= high_b and low_b <= b2
                ]
                if not shared:
                    continue
                low = min(stop for stop, _ in shared)
                floor = _read_floors(shared) if a.write else {}
                for queue, wide in by_queue.items():
                    if queue != c.lane:
                        known = base.get(queue, -1)
                        _wide(a, c.id, last, wide, max(low, known + 1), floor, earlier, later)
        return earlier, later

    def _quiet(self, key: tuple, horizon: int, cid: int, last: int) -> bool:
        """Does no bucket of `key` list an instruction from `horizon` to `last`, c's own
        (`cid`) aside? (A look-back there would find nothing and stop at the horizon.)"""
        ids = self.key_ids.get(key, ())
        k = bisect_left(ids, horizon)
        if k < len(ids) and ids[k] < cid:
            return False
        k = bisect_right(ids, cid)
        return k == len(ids) or ids[k] > last

    def _pieces(self, key: tuple, first: int, end: int) -> list[tuple[int, int]]:
        """Buckets first..end in ranges whose look-backs give the same answer for an access
        covering them whole, each looked at once: the first, the last and the inner buckets
        of each run (`_runs`), and each stretch of buckets that list nothing."""
        firsts, lasts = self._runs(key)
        out = []
        b = first  # the first bucket not yet in `out`
        for k in range(bisect_left(lasts, first), len(firsts)):
            r1 = max(firsts[k], first)
            if r1 > end:
                break
            r2 = min(lasts[k], end)
            if b < r1:
                out.append((b, r1 - 1))
            out.append((r1, r1))
            if r2 - r1 >= 2:
                out.append((r1 + 1, r2 - 1))
            if r2 > r1:
                out.append((r2, r2))
            b = r2 + 1
        if b <= end:
            out.append((b, end))
        return out

    def _horizon(self, c: Scheduled, base: dict[str, int]) -> int:
        """The oldest id from which every instruction older than c that `_waits` does not
        pass over lies: each lane's first instruction after the one `base` knows complete
        (c's own lane aside, which `_waits` passes over whole); any smaller id would do.

        Each consumer lane keeps those first instructions in a heap, updated only where its
        top is known complete: a lane's instructions know at least what the previous one knew
        (`_clocks`), so what one knows complete stays complete for the next. (The first
        instruction of a lane knows nothing: 0.)"""
        if not base:
            return 0
        lanes = self.lanes
        heap = self.heaps.get(c.lane)
        if heap is None:
            heap = self.heaps[c.lane] = []
            for lane, ids in lanes.items():
                k = bisect_right(ids, base.get(lane, -1))
                if lane != c.lane and k < len(ids):
                    heap.append((ids[k], lane))
            heapify(heap)
        while heap:
            first, lane = heap[0]
            known = base.get(lane, -1)
            if first > known:
                return first if first < c.id else c.id
            ids = lanes[lane]
            k = bisect_right(ids, known)
            if k < len(ids):
                heapreplace(heap, (ids[k], lane))
            else:
                heappop(heap)
        return c.id

    def _is_wide(self, a: Access, first: int, last: int) -> bool:
        """Is `a` inexact and in WIDE_SPAN buckets or more, or in every bucket of its memory
        (the one past its end aside)?"""
        if a.exact:
            return False
        if last - first + 1 >= WIDE_SPAN:
            return True
        extent, size = self._memory(a)
        return first == 0 and last >= (extent - 1) // size


def _look_back(
    a: Access,
    lists: tuple,
    lo: int,
    hi: int,
    small: int | None,
    cid: int,
    horizon: int,
    last: int,
    earlier: set,
    later: set,
) -> tuple[int, dict[str, int]]:
    """The look-back of `candidates` in one bucket (its `lists`), for the bytes lo..hi of the
    consumer access `a` there (within sub-bucket `small`, if not None): adds what it finds to
    `earlier` and `later`; returns the id where it stopped and, for a write, the queues whose
    older reads a covering read hides (queue -> that read's id)."""
    a0, a1, a2, a3 = a.box
    wids, writes, rids, reads = lists[0], lists[1], lists[2], lists[3]
    after = last > cid
    stop = -1
    end = bisect_left(wids, cid)
    # (the newest write before c is older than the horizon: nothing to look at)
    if end and wids[end - 1] >= horizon:
        cover: list[tuple[int, int]] = []  # bytes of lo..hi the writes seen cover
        for j in (
            range(end - 1, -1, -1)
            if small is None
            else _descending(lists[4].get(small, ()), lists[5], end)
        ):
            if wids[j] < horizon:
                break
            p, pa = writes[j]
            # (`_boxes_meet` and `_covered`'s partition test, inline: the hot loop)
            b0, b1, b2, b3 = pa.box
            if a0 <= b1 and b0 <= a1 and a2 <= b3 and b2 <= a3:
                earlier.add(p)
                if pa.exact and b0 <= a0 and a1 <= b1 and _covered(cover, pa, a, lo, hi):
                    stop = p.id
                    break
    # (what lies below the horizon `_waits` passes over: as if a write there stopped the
    # look-back, which the read look-back and the wide accesses only see as their own lower
    # limit)
    stop = max(stop, horizon)
    if after:
        _later(a, wids, writes, cid, last, later)
    hidden: dict[str, int] = {}  # queue -> id of the read that hides its older ones
    if not a.write:
        return stop, hidden
    end = bisect_left(rids, cid)
    if not end or rids[end - 1] < stop:
        if after:
            _later(a, rids, reads, cid, last, later)
        return stop, hidden
    for j in (
        range(end - 1, -1, -1)
        if small is None
        else _descending(lists[6].get(small, ()), lists[7], end)
    ):
        if rids[j] < stop:
            break
        p, pa = reads[j]
        if p.lane in hidden:
            continue
        b0, b1, b2, b3 = pa.box
        if not (a0 <= b1 and b0 <= a1 and a2 <= b3 and b2 <= a3):
            continue
        earlier.add(p)
        if pa.exact and _covers(pa, a, lo, hi):
            hidden[p.lane] = p.id
    if after:
        _later(a, rids, reads, cid, last, later)
    return stop, hidden


def _descending(one: list[int], other: list[int], end: int):
    """The positions below `end` of two ascending lists with no position in common, in
    descending order."""
    i, k = bisect_left(one, end) - 1, bisect_left(other, end) - 1
    while i >= 0 and k >= 0:
        if one[i] > other[k]:
            yield one[i]
            i -= 1
        else:
            yield other[k]
            k -= 1
    while i >= 0:
        yield one[i]
        i -= 1
    while k >= 0:
        yield other[k]
        k -= 1


def _read_floors(seen: list[tuple[int, dict[str, int]]]) -> dict[str, int]:
    """For each queue some bucket's look-back hides, the oldest read of it that the look-back
    of some bucket still reaches."""
    queues = {q for _, hidden in seen for q in hidden}
    return {q: min(max(stop, hidden.get(q, -1)) for stop, hidden in seen) for q in queues}


def _wide(
    a: Access,
    cid: int,
    last: int,
    wide: tuple[list, list, list, list],
    low: int,
    floor: dict[str, int],
    earlier: set,
    later: set,
) -> None:
    """What the look-back of `candidates` finds among the accesses that are in every bucket,
    as if they were in each bucket's lists: one of them is found when it meets `a` and the
    look-back of some bucket of `a` reaches it (it is not older than `low`, where the
    look-back of every bucket stopped, nor, for a read, than `floor` of its queue: the read
    that hides that queue in every bucket). Being inexact, they neither stop a look-back nor
    hide a queue. All are on one queue; `low` also leaves out its instructions known
    complete."""
    wids, writes, rids, reads = wide
    for j in range(bisect_left(wids, cid) - 1, -1, -1):
        if wids[j] < low:
            break
        p, pa = writes[j]
        if _boxes_meet(a, pa):
            earlier.add(p)
    if last > cid:
        _later(a, wids, writes, cid, last, later)
    if not a.write:
        return
    for j in range(bisect_left(rids, cid) - 1, -1, -1):
        if rids[j] < low:
            break
        p, pa = reads[j]
        if rids[j] >= floor.get(p.lane, low) and _boxes_meet(a, pa):
            earlier.add(p)
    if last > cid:
        _later(a, rids, reads, cid, last, later)


def _later(a: Access, ids: list[int], entries: list, after: int, last: int, out: set) -> None:
    """Add the instructions with ids in (after, last] whose access may meet `a`."""
    first = bisect_right(ids, after)
    if first == len(ids) or ids[first] > last:
        return
    a0, a1, a2, a3 = a.box
    for j in range(first, bisect_right(ids, last, first)):
        p, pa = entries[j]
        b0, b1, b2, b3 = pa.box
        if a0 <= b1 and b0 <= a1 and a2 <= b3 and b2 <= a3:
            out.add(p)


def _covered(cover: list[tuple[int, int]], p: Access, c: Access, lo: int, hi: int) -> bool:
    """Do the exact write p and the exact writes before it in `cover` (the bytes between lo
    and hi they touch on every partition of c's box, merged) touch every byte of c's box
    between bytes lo and hi? Adds p's bytes to `cover`.

    Newer writes that together cover c's bytes in a bucket hide what came before them there
    as one covering write does (see `_Index`): an older access that conflicts with c there
    conflicts with one of them."""
    pp0, pp1, pb0, pb1 = p.box
    cp0, cp1, _, _ = c.box
    if not (pp0 <= cp0 and cp1 <= pp1):
        return False
    first = pb0 if pb0 > lo else lo
    last = pb1 if pb1 < hi else hi
    if first > last:
        return False
    if first == lo and last == hi:
        return True
    merged = []
    for a, b in cover:
        if b + 1 < first or last + 1 < a:
            merged.append((a, b))
        else:
            first, last = min(first, a), max(last, b)
    merged.append((first, last))
    cover[:] = merged
    return first == lo and last == hi


def _covers(p: Access, c: Access, lo: int, hi: int) -> bool:
    """Does the exact access p touch every byte of c's box between bytes lo and hi?"""
    pp0, pp1, pb0, pb1 = p.box
    cp0, cp1, _, _ = c.box
    return pp0 <= cp0 and cp1 <= pp1 and pb0 <= lo and hi <= pb1
