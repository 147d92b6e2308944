"""Checks across the programs of one LNC launch: cores writing the same shared HBM bytes
unordered, and cores whose compiled control flow differs.

Under LNC=2 two physical cores run the kernel, each specialised for its `nl.program_id()`,
and share the kernel's inputs, outputs and every `nl.shared_hbm` tensor. The hardware
requires both cores to run the same control flow (compiled loops are basic blocks; a
mismatch is a backend error, or a hang). Nothing orders two cores' DMA writes to the same
bytes, so the value left there depends on timing.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from ...diagnostics import DiagnosticSink, Related
from ...ir.core import Alloc, DynLoop, Inst, Kernel, Loop, Tensor
from ...ir.isa import COLLECTIVES, CROSS_CORE, PREPARES
from ...ir.printer import same_text
from .. import offsets
from ..base import without_gc
from ..regions import loop_ranges
from .accesses import Access, accesses
from .regions import Footprint, comparable, footprint
from .same_values import SameValues


def shared_tensors(kernel: Kernel) -> dict[tuple, Tensor]:
    """The tensors of `kernel` that every core of the launch shares, keyed across cores:
    parameters by name, `shared_hbm` allocations by their order (each core executes the
    same allocations)."""
    out: dict[tuple, Tensor] = {("param", t.name): t for t in kernel.params}
    allocs = [op.result for op, _ in kernel.walk() if isinstance(op, Alloc)]
    shared = [t for t in allocs if t.buffer == "shared_hbm" and t.kind != "constant"]
    for n, t in enumerate(shared):
        out[("shared_hbm", n)] = t
    return out


@without_gc
def check_cores(kernels: list[Kernel], sink: DiagnosticSink) -> None:
    """Report outputs no core writes, cross-core races and control-flow divergence between
    the launch's programs."""
    every = [accesses(k) for k in kernels]  # each core's, found once for the checks below
    _unwritten_outputs(kernels, every, sink)
    if _divergence(kernels, sink) or _meetings(kernels, sink):
        return
    # a kernel that never asks for its core, or whose programs come out the same whatever its
    # core (the NKI Library's cascaded_max at one row), runs the same program on every core:
    # overlapping writes then carry the same values, whichever lands last
    if any(k.reads_core for k in kernels) and not all(
        same_text(kernels[0], k) for k in kernels[1:]
    ):
        _races(kernels, every, sink)


def _unwritten_outputs(
    kernels: list[Kernel], every: list[list[Access]], sink: DiagnosticSink
) -> None:
    """A returned tensor that no core of the launch writes (the cores share their outputs:
    one core may write an output for both)."""
    written = [{id(a.ap.tensor) for a in found if a.write and a.reachable} for found in every]
    first = kernels[0]
    params = {id(p) for p in first.params}
    for n, t in enumerate(first.returns):
        if id(t) in params:
            continue
        if not any(n < len(k.returns) and id(k.returns[n]) in w for k, w in zip(kernels, written)):
            sink.error(
                "err_tensor_output_not_written_to",
                f"`{t.label or t.name}` is returned but no core of the LNC={len(kernels)} "
                "launch writes it",
                t.loc,
                "write the output with `nisa.dma_copy(dst=...)` before returning it (on one "
                "core is enough: the cores share it); a loop with zero iterations writes nothing",
            )


def _api(opcode: str) -> str:
    """How the kernel spells the instruction: `ncc.all_reduce`, `nisa.sendrecv`."""
    if opcode == "collective_permute_reduce":
        return "ncc.collective_permute_implicit_reduce"
    return f"ncc.{opcode}" if opcode in COLLECTIVES else f"nisa.{opcode}"


def meetings(kernel: Kernel) -> list[Inst]:
    """The kernel's instructions that meet the other core (`core_barrier`, `sendrecv`)."""
    return [op for _, op in _as_unrolled(kernel.body) if getattr(op, "opcode", None) in CROSS_CORE]


def check_single_core(kernel: Kernel, sink: DiagnosticSink) -> None:
    """A program of a one-core launch has no other core to meet."""
    for op in meetings(kernel):
        sink.error(
            "nkic_lnc_degree",
            f"{_api(op.opcode)} meets the other core of an LNC=2 launch, but this program is "
            "compiled for LNC=1",
            op.loc,
            "compile and run the kernel with --lnc 2 (kernel[2], lnc=2 in Python)",
        )


@without_gc
def check_prepares(kernel: Kernel, sink: DiagnosticSink) -> None:
    """A split `_v` collective's prepare and trigger in the same loop body, and no prepare
    left without its trigger: each prepare is followed by exactly one trigger (one slot)."""
    pending: tuple[Inst, tuple[Loop, ...]] | None = None
    for op, loops in kernel.walk():
        if not isinstance(op, Inst):
            continue
        if op.opcode in PREPARES:
            pending = (op, loops)
        elif op.attrs.get("prepared") and pending is not None:
            prepare, where = pending
            pending = None
            if where != loops:
                sink.error(
                    "nkic_collective_prepare_slot",
                    f"ncc.{op.opcode}_trigger runs in other loops than its prepare: every "
                    "execution of a prepare needs exactly one trigger before the next prepare",
                    op.loc,
                    "call the prepare and its trigger in the same loop body",
                    related=(Related(prepare.loc, "the prepare"),),
                )
    if pending is not None:
        prepare = pending[0]
        sink.error(
            "nkic_collective_prepare_slot",
            f"ncc.{prepare.opcode} is never triggered: each prepare must be followed by exactly "
            "one trigger",
            prepare.loc,
            f"call ncc.{prepare.opcode.replace('_prepare', '_trigger')} on the instruction it "
            "returns",
        )


def _meetings(kernels: list[Kernel], sink: DiagnosticSink) -> bool:
    """Every core must reach the same cross-core instructions in the same order."""
    first = meetings(kernels[0])
    for other in kernels[1:]:
        second = meetings(other)
        for n in range(max(len(first), len(second))):
            a = first[n] if n < len(first) else None
            b = second[n] if n < len(second) else None
            if a is not None and b is not None and a.opcode == b.opcode:
                continue
            here, core, there, peer = (
                (a, 0, b, other.core) if a is not None else (b, other.core, a, 0)
            )
            met = _api(there.opcode) if there is not None else "nothing"
            sink.error(
                "nkic_lnc_divergent_control_flow",
                f"core {core} reaches {_api(here.opcode)} here as its meeting {n + 1} with the "
                f"other core, where core {peer} reaches {met}: the cores would wait for each "
                "other forever",
                here.loc,
                "run the same core_barrier/sendrecv calls on both cores, in the same order",
                related=(Related(there.loc, f"core {peer} reaches this instead"),)
                if there is not None
                else (),
            )
            return True
    return False


def _skeleton(kernel: Kernel) -> list[tuple[int, Loop]]:
    return [(depth, op) for depth, op in _as_unrolled(kernel.body) if isinstance(op, Loop)]


def _as_unrolled(ops: list, depth: int = 0):
    """(nesting depth, op) of every op in program order, with the loops kept from Python
    `range` loops (`Loop.python`) unrolled as the language unrolls them: the cores must agree
    on the control flow the kernel has, not on how nkic chose to represent it."""
    for op in ops:
        if isinstance(op, Loop) and op.python:
            inner = list(_as_unrolled(op.body, depth))
            if any(
                isinstance(o, Loop) or getattr(o, "opcode", None) in CROSS_CORE for _, o in inner
            ):
                for _ in range(op.trip_count):
                    yield from inner
            continue
        yield depth, op
        if isinstance(op, Loop):
            yield from _as_unrolled(op.body, depth + 1)


def _divergence(kernels: list[Kernel], sink: DiagnosticSink) -> bool:
    first = _skeleton(kernels[0])
    for other in kernels[1:]:
        second = _skeleton(other)
        for n in range(max(len(first), len(second))):
            a = first[n] if n < len(first) else None
            b = second[n] if n < len(second) else None
            if a and b and a[0] == b[0] and _trips(a[1]) == _trips(b[1]):
                continue
            _report_divergence(sink, kernels[0], a, other, b)
            return True
    return False


def _trips(loop: Loop) -> tuple:
    """What the cores must agree on about a loop: its trip count, or for a dynamic loop its
    kind and the trip count of immediate bounds (register bounds are compared at run time)."""
    if not isinstance(loop, DynLoop):
        return ("static", loop.trip_count)
    start, stop = loop.bound_start, loop.bound_stop
    if loop.kind == "for" and isinstance(start, int) and isinstance(stop, int):
        return ("dynamic", len(range(start, stop, loop.bound_step)))
    return ("dynamic", loop.kind, None)


def _describe(entry: tuple[int, Loop] | None) -> str:
    if entry is None:
        return "no loop"
    depth, loop = entry
    trips = _trips(loop)
    if trips[-1] is None:
        return f"a dynamic loop at nesting depth {depth}"
    what = "a dynamic loop" if trips[0] == "dynamic" else "a loop"
    return f"{what} of {trips[-1]} iteration(s) at nesting depth {depth}"


def _report_divergence(sink, k0: Kernel, a, k1: Kernel, b) -> None:
    here, there = (a, b) if a is not None else (b, a)
    core_here, core_there = (k0.core, k1.core) if a is not None else (k1.core, k0.core)
    related = ()
    if there is not None:
        related = (Related(there[1].loc, f"core {core_there} runs {_describe(there)} here"),)
    sink.error(
        "nkic_lnc_divergent_control_flow",
        f"the cores of the LNC={k0.cores} launch run different control flow: core "
        f"{core_here} runs {_describe(here)} here, core {core_there} runs {_describe(there)}",
        here[1].loc,
        "both cores must run the same loops with the same trip counts: make the loop bounds "
        "independent of nl.program_id(), and select each core's share of the data with "
        "index arithmetic instead",
        related=related,
    )


def _accesses(
    found: list[Access], keys: dict[int, tuple]
) -> tuple[list[tuple[tuple, int, Access]], list[tuple[tuple, int, Access]]]:
    """The writes and the reads of shared tensors, each with its epoch: the number of
    meetings with the other core before it (a meeting inside a loop counts at the loop's
    start)."""
    writes, reads = [], []
    epoch, last = 0, None
    for a in found:
        if a.inst.opcode in CROSS_CORE:
            epoch += a.inst is not last
            last = a.inst
            continue
        if a.reachable and id(a.ap.tensor) in keys:
            (writes if a.write else reads).append((keys[id(a.ap.tensor)], epoch, a))
    return writes, reads


def _races(kernels: list[Kernel], every: list[list[Access]], sink: DiagnosticSink) -> None:
    writes, reads, shared = [], [], []
    for k, found in zip(kernels, every):
        keys = {id(t): key for key, t in shared_tensors(k).items()}
        shared.append(keys)
        w, r = _accesses(found, keys)
        writes.append(w)
        reads.append(r)
    values: SameValues | None = None
    boxes = _Boxes()
    groups = [_Group.of(w, boxes) for w in writes]
    for i in range(len(kernels)):
        for j in range(len(kernels)):
            if i != j:
                _read_races(kernels, i, reads[i], groups[i], j, groups[j], boxes, sink)
    for i in range(len(kernels)):
        for j in range(i + 1, len(kernels)):
            reported: set[tuple] = set()
            for key, epoch, a in writes[i]:
                group = groups[j].get((key, epoch))
                if group is None:
                    continue
                for b in group.meeting(a, boxes):
                    # writes separated by a meeting of the cores are ordered (same epoch)
                    if (a.inst.loc, b.inst.loc) in reported:
                        continue
                    if a.ap.dynamic is not None or b.ap.dynamic is not None:
                        continue  # a run-time offset: no overlap can be proved here
                    overlap = _overlap(a, b, boxes)
                    if overlap is None:
                        continue
                    # both cores storing the same values there leave them whatever the timing
                    values = values or SameValues(kernels, shared)
                    if values.same(i, (a.inst.uid, a.operand), j, (b.inst.uid, b.operand)):
                        continue
                    reported.add((a.inst.loc, b.inst.loc))
                    _report_race(sink, kernels[i], a, kernels[j], b, overlap)


def _read_races(
    kernels: list[Kernel],
    i: int,
    reads: list[tuple[tuple, int, Access]],
    own: dict[tuple, _Group],
    j: int,
    groups: dict[tuple, _Group],
    boxes: _Boxes,
    sink: DiagnosticSink,
) -> None:
    """Reads of core `i` that a write of core `j` may overlap with no meeting of the cores
    between them: what the read sees depends on which lands first. A read of bytes core `i`
    wrote itself earlier in the epoch is left to the write-write check (both cores writing
    the same values there is no race). One report per pair of instructions."""
    reported: set[tuple] = set()
    for key, epoch, a in reads:
        group = groups.get((key, epoch))
        if group is None or a.ap.dynamic is not None:
            continue
        mine = own.get((key, epoch))
        if mine is not None and any(
            w.index < a.index and _overlap(a, w, boxes) is not None for w in mine.meeting(a, boxes)
        ):
            continue
        for b in group.meeting(a, boxes):
            if b.ap.dynamic is not None or (a.inst.loc, b.inst.loc) in reported:
                continue
            overlap = _overlap(a, b, boxes)
            if overlap is not None:
                reported.add((a.inst.loc, b.inst.loc))
                _report_race(sink, kernels[i], a, kernels[j], b, overlap, read=True)
                break


class _Boxes:
    """Each access's footprint and its intervals, computed once: a launch compares every
    write of one core with the writes of the other core to the same tensor."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[Access, Footprint, list[tuple[int, int]]]] = {}

    def get(self, a: Access) -> tuple[Footprint, list[tuple[int, int]]]:
        hit = self._found.get(id(a))
        if hit is None or hit[0] is not a:
            f = footprint(a.ap, loop_ranges(a.loops))
            hit = self._found[id(a)] = (a, f, f.intervals(loop_ranges(a.loops)))
        return hit[1], hit[2]


class _Group:
    """The writes of one core to one shared tensor in one epoch, in program order. Those with
    element footprints are also sorted by their first dimension's interval, so that a write of
    the other core with an element footprint meets only those whose interval overlaps its own
    (elsewhere the element boxes are disjoint and `_overlap` finds no overlap); the others are
    always compared."""

    def __init__(self) -> None:
        self.order: dict[int, int] = {}  # id(access) -> its place in program order
        self.others: list[Access] = []
        self.lows: list[int] = []
        self.highs: list[int] = []  # the largest high of the sorted entries up to each
        self.sorted: list[Access] = []

    @staticmethod
    def of(writes: list[tuple[tuple, int, Access]], boxes: _Boxes) -> dict[tuple, _Group]:
        groups: dict[tuple, _Group] = {}
        staged: dict[tuple, list[tuple[int, int, int, Access]]] = {}
        for n, (key, epoch, b) in enumerate(writes):
            group = groups.get((key, epoch))
            if group is None:
                group = groups[(key, epoch)] = _Group()
                staged[(key, epoch)] = []
            group.order[id(b)] = n
            f, box = boxes.get(b)
            if f.kind == "elements" and b.ap.dynamic is None:
                staged[(key, epoch)].append((box[0][0], box[0][1], n, b))
            else:
                group.others.append(b)
        for k, entries in staged.items():
            group = groups[k]
            entries.sort(key=lambda e: (e[0], e[2]))
            top = None
            for lo, hi, _, b in entries:
                top = hi if top is None else max(top, hi)
                group.lows.append(lo)
                group.highs.append(top)
                group.sorted.append(b)
        return groups

    def meeting(self, a: Access, boxes: _Boxes) -> list[Access]:
        """The writes of the group that may overlap `a`, in program order."""
        f, box = boxes.get(a)
        if f.kind != "elements" or a.ap.dynamic is not None:
            found = self.sorted + self.others
        else:
            lo, hi = box[0]
            found = list(self.others)
            k = bisect_right(self.lows, hi) - 1
            while k >= 0 and self.highs[k] >= lo:
                b = self.sorted[k]
                if boxes.get(b)[1][0][1] >= lo:
                    found.append(b)
                k -= 1
        found.sort(key=lambda b: self.order[id(b)])
        return found


def _lattice(ap) -> tuple[int, int]:
    """(g, r): every element `ap` touches is r modulo g (g = 0: a single element)."""
    g = 0
    for _, coeff in ap.offset.terms:
        g = math.gcd(g, coeff)
    for step, num in ap.pattern:
        if num > 1:
            g = math.gcd(g, step)
    return g, ap.offset.const


def _interleaved(a: Access, b: Access) -> bool:
    """Whether the two accesses touch disjoint residues of a common stride (even and odd
    columns), which the boxes below cannot tell apart."""
    if a.ap.dtype != b.ap.dtype:
        return False
    (ga, ra), (gb, rb) = _lattice(a.ap), _lattice(b.ap)
    g = math.gcd(ga, gb)
    return g > 1 and (ra - rb) % g != 0


def _overlap(a: Access, b: Access, boxes: _Boxes) -> tuple[int, int, str] | None:
    """The first and last byte both accesses may write and the elements, or None when they
    are disjoint. (HBM footprints are in elements or flat bytes.)"""
    if _interleaved(a, b):
        return None
    (fa, box_a), (fb, box_b) = boxes.get(a), boxes.get(b)
    if fa.kind == fb.kind:
        boxes_ = [box_a, box_b]
    else:
        fa, fb = comparable(fa, fb)
        boxes_ = [f.intervals(loop_ranges(x.loops)) for f, x in ((fa, a), (fb, b))]
    lows = [max(x[0], y[0]) for x, y in zip(*boxes_)]
    highs = [min(x[1], y[1]) for x, y in zip(*boxes_)]
    if any(lo > hi for lo, hi in zip(lows, highs)):
        return None
    t = a.ap.tensor
    if fa.kind == "elements":
        strides = offsets.strides(t.shape)
        size = t.itemsize
        first = sum(lo * s for lo, s in zip(lows, strides)) * size
        last = sum(hi * s for hi, s in zip(highs, strides)) * size + size - 1
        box = ", ".join(f"{lo}:{hi + 1}" for lo, hi in zip(lows, highs))
        return first, last, f"elements [{box}], "
    return lows[0], highs[0], ""


def _report_race(
    sink, k0: Kernel, a: Access, k1: Kernel, b: Access, overlap, read: bool = False
) -> None:
    """Core `k0`'s access `a` (a write, or with `read` a read) and core `k1`'s write `b`
    overlap unordered."""
    t = a.ap.tensor
    name = t.label or t.name
    first, last, box = overlap
    span = f"{box}bytes {first}..{last} of `{name}` (shared HBM)"
    if read:
        code, hint = (
            "nkic_lnc_shared_hbm_read_race",
            "separate them with `nisa.core_barrier` (or a collective both cores run), or read "
            "only the part this core writes itself",
        )
        message = (
            f"core {k0.core} reads {span}, which core {k1.core} writes, and nothing orders the "
            "read and the write: the value read depends on timing"
        )
    else:
        code, hint = (
            "nkic_lnc_shared_hbm_race",
            "give each core its own slice of the tensor, indexed by nl.program_id()",
        )
        message = (
            f"core {k0.core} and core {k1.core} both write {span} and nothing orders the two "
            "writes: the result depends on timing"
        )
    sink.error(
        code,
        message,
        a.inst.loc,
        hint,
        related=(Related(b.inst.loc, f"core {k1.core} writes the same bytes here"),),
    )
