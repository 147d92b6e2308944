"""Spilling PSUM tiles to HBM when the PSUM tiles live at once do not fit, even read out early.

A kernel may compute more matmul results into separate PSUM tiles than PSUM holds and read
them only later, after something that depends on all of them (a softmax computes every score
tile, reduces a row maximum over them, then subtracts it from each tile). Beta 1 kernels do
this with PSUM block tensors: `qk = nl.ndarray((32, 8, nl.par_dim(128), 512), buffer=nl.psum)`
is 256 tiles of one bank each, 32 times the size of PSUM. The NKI compiler allocates such
tensors itself: "If the total size of the live data being used by a NKI kernel overflows the
capacity of any on-chip memory, the Neuron compiler will insert the necessary spills or refills
between that memory and the next-tier memory in the hierarchy"
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/get-started/about/memory-hierarchy-overview.html).

nkic does the same for a PSUM tile that is allocated at the kernel's top level, written and read
only by top-level instructions, written whole by one of them (so the copy reads no unset byte),
and read only after its last write: right after that write, the tile is copied to SBUF and from
there to a private HBM scratch tensor, and each later instruction that reads the tile reads an
SBUF copy reloaded from HBM just before it. The PSUM tile is then live only while it is
computed. The copies are real instructions: the simulator runs them, so the result is exactly
the same and their cost shows in the timeline; a warning says how many bytes were spilled. Tiles
are spilled longest wait first, as few as make PSUM fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.affine import Affine
from ..ir.core import AccessPattern, Alloc, Inst, Kernel, Loop, Op, Tensor, walk_ops
from .checks.accesses import is_write


@dataclass
class Candidate:
    """A top-level PSUM tensor that may be spilled: its last write and its readers, by
    position in the kernel's top-level op list."""

    tensor: Tensor
    last_write: int
    reads: list[int]

    @property
    def wait(self) -> int:
        return self.reads[0] - self.last_write


def candidates(kernel: Kernel) -> list[Candidate]:
    """The spillable PSUM tensors, longest wait between last write and first read first."""
    top: set[Tensor] = {
        op.result
        for op in kernel.body
        if isinstance(op, Alloc) and op.result.buffer == "psum" and not op.result.fixed_address
    }
    top -= set(kernel.returns)
    writes: dict[Tensor, list[int]] = {}
    reads: dict[Tensor, list[int]] = {}
    whole: set[Tensor] = set()  # written whole by one instruction: the copy reads no unset byte
    bad: set[Tensor] = set()
    for pos, op in enumerate(kernel.body):
        if isinstance(op, Loop):
            bad.update(_touched(op) & top)
        elif isinstance(op, Inst):
            for name, ap in op.aps():
                t = ap.tensor
                if t not in top:
                    continue
                if ap.dynamic is not None:
                    bad.add(t)
                write = is_write(op, name)
                (writes if write else reads).setdefault(t, []).append(pos)
                if write and _covers(ap):
                    whole.add(t)
    found = []
    for t in (top & whole) - bad:
        w, r = writes.get(t), reads.get(t)
        if not w or not r or min(r) <= max(w):
            continue
        found.append(Candidate(t, max(w), sorted(set(r))))
    found.sort(key=lambda c: (-c.wait, c.last_write))
    return found


def _covers(ap: AccessPattern) -> bool:
    """Whether `ap` is every element of its tensor, in storage order."""
    t = ap.tensor
    return ap.dtype == t.dtype and ap.offset == 0 and ap.pattern == t.full_pattern()


def _touched(loop: Loop) -> set[Tensor]:
    return {
        ap.tensor for op, _ in walk_ops(loop.body) if isinstance(op, Inst) for _, ap in op.aps()
    }


def _whole(t: Tensor) -> AccessPattern:
    return AccessPattern(t, Affine(0), t.full_pattern(), t.dtype)


class _Names:
    """Fresh tensor names `tN` after the kernel's highest."""

    def __init__(self, kernel: Kernel):
        top = -1
        for t in kernel.tensors():
            if t.name[1:].isdigit():
                top = max(top, int(t.name[1:]))
        self.next = top + 1

    def __call__(self) -> str:
        self.next += 1
        return f"t{self.next - 1}"


def spill(kernel: Kernel, chosen: list[Candidate]) -> int:
    """Rewrite the kernel so each chosen tensor goes through HBM between its last write and
    its reads; the number of bytes spilled (stored once, whatever the reloads)."""
    name = _Names(kernel)
    after: dict[int, list[Op]] = {}
    before: dict[int, list[Op]] = {}
    swap: dict[int, dict[Tensor, Tensor]] = {}
    spilled = 0
    for c in chosen:
        t = c.tensor
        loc = t.loc
        label = t.label or t.name
        stage = Tensor(name(), "sbuf", t.dtype, t.shape, f"{label} (spill)", loc=loc)
        scratch = Tensor(name(), "hbm", t.dtype, t.shape, f"{label} (spilled)", loc=loc)
        scratch.spill = True
        after[c.last_write] = after.get(c.last_write, []) + [
            Alloc(stage, loc),
            Inst("tensor_copy", {"dst": _whole(stage), "src": _whole(t)}, _copy_attrs(), loc),
            Alloc(scratch, loc),
            Inst("dma_copy", {"dst": _whole(scratch), "src": _whole(stage)}, _dma_attrs(), loc),
        ]
        spilled += t.size * t.itemsize
        for r in c.reads:
            reload = Tensor(name(), "sbuf", t.dtype, t.shape, f"{label} (reload)", loc=loc)
            before.setdefault(r, []).extend(
                [
                    Alloc(reload, loc),
                    Inst(
                        "dma_copy",
                        {"dst": _whole(reload), "src": _whole(scratch)},
                        _dma_attrs(),
                        loc,
                    ),
                ]
            )
            swap.setdefault(r, {})[t] = reload
    body: list[Op] = []
    for pos, op in enumerate(kernel.body):
        body += before.get(pos, [])
        if pos in swap:
            op = _reading(op, swap[pos])
        body.append(op)
        body += after.get(pos, [])
    kernel.body[:] = body
    return spilled


def _reading(op: Op, swap: dict[Tensor, Tensor]) -> Op:
    """`op` (an instruction that only reads the swapped tensors) reading their reloads."""
    assert isinstance(op, Inst)
    operands = dict(op.operands)
    for name, ap in op.aps():
        if ap.tensor in swap:
            operands[name] = AccessPattern(
                swap[ap.tensor], ap.offset, ap.pattern, ap.dtype, ap.dynamic
            )
    new = Inst(op.opcode, operands, dict(op.attrs), op.loc, op.engine)
    new.unrolled = op.unrolled
    new.iteration = op.iteration
    return new


def _copy_attrs() -> dict:
    return {"engine": "unknown", "name": None}


def _dma_attrs() -> dict:
    return {"oob_mode": "error", "dge_mode": "unknown", "engine": "unknown", "name": None}
