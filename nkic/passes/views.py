"""HBM address model: parameters given as views into larger buffers, and 32-bit offsets.

`ApplyViews` rewrites every access of a view parameter into an access of its whole buffer
(element [i0, i1, ...] of the view is buffer element `offset + sum(i_k * strides[k])`) and
makes the parameter that buffer, so the backend, the runtime and the offset check see the
addresses the hardware would use. The checks against the view's own shape (bounds, races)
ran before, on the kernel as written.

`CheckHbmOffsets` reports accesses whose element offset into an HBM tensor can pass
2^31 - 1 where the hardware computes it in 32 bits: the part a compiled loop adds to the
access's base (its induction variable lives in a 32-bit engine register), and a dynamic
index (`scalar_offset` / `vector_offset`, int32 in NKI up to 0.6; NKI 0.7 adds int64 scalar
offsets to reach past 4 GB). Offsets the compiler folds to constants are 64-bit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.affine import Affine
from ..ir.core import AccessPattern, Inst, Kernel
from . import offsets
from .base import Pass, PassContext
from .regions import loop_ranges

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class ApplyViews(Pass):
    """Re-addresses accesses of view parameters onto their buffers."""

    name = "apply-views"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        views = [t for t in kernel.params if t.view is not None]
        if not views:
            return
        for op, loops in kernel.walk():
            if not isinstance(op, Inst):
                continue
            ranges = loop_ranges(loops)
            for name, ap in op.aps():
                if ap.tensor.view is None:
                    continue
                moved = _through_view(ap, ranges)
                if moved is None:
                    t = ap.tensor
                    ctx.sink.error(
                        "nkic_view_access",
                        f"operand {name!r} of {op.opcode} accesses `{t.label}` in a way nkic cannot "
                        f"map onto the buffer it is a view of (offset {t.view.offset}, strides "
                        f"{list(t.view.strides)})",
                        op.loc,
                        "access the view one dimension per access-pattern entry (slices and "
                        "indices), without dtype reinterpretation or dynamic offsets; or pass "
                        "the argument as a contiguous array",
                    )
                    continue
                op.operands[name] = moved
        for t in views:
            t.view_shape, t.shape = t.shape, tuple(t.view.buffer)


def _through_view(ap: AccessPattern, ranges) -> AccessPattern | None:
    t = ap.tensor
    if ap.dynamic is not None or ap.dtype != t.dtype:
        return None
    contiguous = offsets.strides(t.shape)
    view = t.view.strides
    parts = offsets.split(ap.offset, contiguous, ranges)
    offset = Affine(t.view.offset)
    for part, stride in zip(parts, view):
        offset = offset + part * stride
    pattern = []
    for step, num in ap.pattern:
        if num == 1:
            pattern.append((step, num))
            continue
        mapped = _step(step, num, t.shape, contiguous, view)
        if mapped is None:
            return None
        pattern.append((mapped, num))
    return replace(ap, offset=offset, pattern=tuple(pattern))


def _step(step: int, num: int, shape, contiguous, view) -> int | None:
    """The buffer step of a pattern entry that moves along one dimension of the view."""
    for k, c in enumerate(contiguous):
        if step != 0 and step % c == 0 and abs(step // c) * (num - 1) < shape[k]:
            return step // c * view[k]
    return None if step != 0 else 0


@dataclass(frozen=True)
class CheckHbmOffsets(Pass):
    """Reports `nkic_hbm_offset_overflow` for 32-bit element offsets past 2^31 - 1."""

    name = "hbm-offsets"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        for op, loops in kernel.walk():
            if not isinstance(op, Inst):
                continue
            ranges = loop_ranges(loops)
            folded = {lp.var for lp in loops if lp.python}
            for name, ap in op.aps():
                t = ap.tensor
                if t.on_chip or not all(lp.trip_count for lp in loops):
                    continue
                if ap.dynamic is not None:
                    last, why = t.size - 1, f"its {ap.dynamic.kind} offset is a 32-bit index"
                elif any(v not in folded for v in ap.offset.vars):
                    # the loop adds its part to the access's base address in a 32-bit register
                    # (a Python loop's part is folded into the constant, as it is unrolled)
                    moving = Affine(0, {v: c for v, c in ap.offset.terms if v not in folded})
                    last = moving.bounds(ranges)[1]
                    last += sum(max(0, step * (n - 1)) for step, n in ap.pattern)
                    why = "the part the loop adds to the base address is computed in a 32-bit register"
                else:
                    continue
                if last > INT32_MAX:
                    _report(ctx, op, name, t, last, why)


def _report(ctx: PassContext, op: Inst, name: str, t, last: int, why: str) -> None:
    what = f"`{t.label}`" if t.label else f"%{t.name}"
    where = f" (a view into a buffer of {t.size:,} elements)" if t.view is not None else ""
    ctx.sink.error(
        "nkic_hbm_offset_overflow",
        f"operand {name!r} of {op.opcode} moves {last:,} elements ({last * t.itemsize:,} bytes) "
        f"into {what}{where}, past 2^31 - 1: {why}, so the address wraps",
        op.loc,
        "split the tensor into parts of fewer than 2^31 elements (separate arguments or "
        "views), or take the large part of the offset out of the loop (nl.static_range "
        "folds it into a 64-bit constant)",
    )
