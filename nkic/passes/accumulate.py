"""Resolves `nc_matmul(accumulate=None)` with the NKI 0.3.0 rule, statically.

The first matmul write to a PSUM location within its allocation's lifetime overwrites, later
writes accumulate. A tensor allocated inside a loop body is fresh in every iteration, so only
loops between the allocation and the matmul can re-write a location. The result is `False`
(always overwrite), `True` (always accumulate) or a tuple of loop variables: overwrite iff every
listed variable is at its first iteration (neff `{"unless_first": [...]}`). Only matmul writes
count: a `memset` of PSUM does not start an accumulation group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.core import Alloc, Inst, Kernel, Loop, Tensor
from .base import Pass, PassContext
from .regions import instances_may_overlap, loop_ranges, region

MATMULS = ("nc_matmul", "nc_matmul_mx")


@dataclass
class _Write:
    inst: Inst
    loops: tuple[Loop, ...]
    pos: int


def _scope_depth(kernel: Kernel) -> dict[Tensor, int]:
    """Number of loops enclosing each tensor's definition (params: 0)."""
    depth = {t: 0 for t in kernel.params}
    for op, loops in kernel.walk():
        if isinstance(op, Alloc):
            depth[op.result] = len(loops)
    return depth


def _overlap(a: _Write, b: _Write, equal: tuple[Loop, ...], carried: Loop | None) -> bool:
    """May write `b` (at an earlier instance) touch what write `a` touches?"""
    ra = region(a.inst.operands["dst"], loop_ranges(a.loops)).to_bytes()
    rb = region(b.inst.operands["dst"], loop_ranges(b.loops)).to_bytes()
    return instances_may_overlap(ra, a.loops, rb, b.loops, equal, carried)


def resolve(write: _Write, others: list[_Write], depth: int) -> bool | tuple[str, ...]:
    """The accumulate attribute of `write` given every matmul write to the same tensor."""
    inner = write.loops[depth:]  # loops re-executed during the tensor's lifetime
    first: list[str] = []
    for i, lp in enumerate(inner):
        # does an earlier iteration of `lp` (outer loops equal) write the same location?
        if _overlap(write, write, write.loops[: depth + i], lp):
            first.append(lp.var)
    for other in others:
        if other is write:
            continue
        common = []
        for x, y in zip(write.loops[depth:], other.loops[depth:]):
            if x is not y:
                break
            common.append(x)
        shared = write.loops[:depth] + tuple(common)
        if other.pos < write.pos and _overlap(write, other, shared, None):
            return True  # an earlier write in the same iteration: always accumulate
        for i, lp in enumerate(common):
            # an earlier iteration of `lp` (outer loops equal) ran `other` on this location
            if lp.var not in first and _overlap(write, other, write.loops[: depth + i], lp):
                first.append(lp.var)
    order = [lp.var for lp in inner if lp.var in first]
    return tuple(order) if order else False


@dataclass(frozen=True)
class ResolveAccumulate(Pass):
    """Sets every matmul's `accumulate` attribute to True, False or unless-first loop vars."""

    name: ClassVar[str] = "resolve-accumulate"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        depth = _scope_depth(kernel)
        writes: dict[Tensor, list[_Write]] = {}
        for pos, (op, loops) in enumerate(kernel.walk()):
            if isinstance(op, Inst) and op.opcode in MATMULS and "dst" in op.operands:
                dst = op.operands["dst"]
                if dst.tensor.buffer == "psum":
                    writes.setdefault(dst.tensor, []).append(_Write(op, loops, pos))
        for tensor, ws in writes.items():
            for w in ws:
                if w.inst.attrs.get("accumulate") is None:
                    if any(lp.trip_count == 0 for lp in w.loops):
                        w.inst.attrs["accumulate"] = False
                        continue
                    w.inst.attrs["accumulate"] = resolve(w, ws, depth.get(tensor, 0))
