"""Static bounds check: every access pattern stays inside its tensor, for every loop iteration.

Interval arithmetic over the affine offsets (tinygrad's `validate.py` idea): the cost per access
is O(loop variables), independent of trip counts. An access whose pattern walks the tensor's
dimensions (a slice) is checked dimension by dimension, so a slice running past the end of a
row is caught even where the storage continues; any other pattern against the storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.affine import Affine
from ..ir.core import UNKNOWN_LOC, AccessPattern, Inst, Kernel, Loop
from . import offsets
from .base import Pass, PassContext
from .regions import loop_ranges, region, row_elems, runs
from .register_ranges import register_ranges

CODE = "err_tensor_access_out_of_bound"


def _failing_values(c: int, rest: int, limit: int, lp: Loop, upper: bool) -> str | None:
    """Values of `lp.var` where rest + c*v passes `limit` (above if `upper`, else below), or
    None when every value does. The failing values are a prefix or suffix of the loop range."""
    a, b = rest + c * lp.start, c * lp.step  # value at iteration k is a + b*k
    big, lim = (b, limit - a) if upper else (-b, a - limit)  # fails iff big*k > lim
    n = lp.trip_count
    if big > 0:
        k0 = max(0, lim // big + 1)
        if k0 == 0:
            return None
        v = lp.start + k0 * lp.step
        return f"{lp.source_name}={v}" if k0 == n - 1 else f"{lp.source_name} >= {v}"
    k1 = min(n - 1, -(lim // -big) - 1)
    if k1 == n - 1:
        return None
    v = lp.start + k1 * lp.step
    return f"{lp.source_name}={v}" if k1 == 0 else f"{lp.source_name} <= {v}"


def failing_iterations(expr: Affine, limit: int, loops: dict[str, Loop], upper: bool) -> str:
    """Describe the loop values where `expr` exceeds `limit` (upper) or drops below it."""
    ranges = loop_ranges(list(loops.values()))
    conds = []
    for v, c in expr.terms:
        others = Affine(expr.const, {u: k for u, k in expr.terms if u != v})
        olo, ohi = others.bounds(ranges)
        lp = loops[v]
        cond = _failing_values(c, ohi if upper else olo, limit, lp, upper)
        if cond:
            known = lp.loc.file != UNKNOWN_LOC.file
            conds.append(cond + (f" (loop at line {lp.loc.line})" if known else ""))
    if not expr.terms:
        return "in every iteration"
    if not conds:
        names = ", ".join(loops[v].source_name if v in loops else v for v in expr.vars)
        return "for every value of " + names
    return "when " + " and ".join(conds)


def dimension_indices(
    ap: AccessPattern, ranges: dict[str, tuple[int, int]] | None = None
) -> list[tuple[int, Affine, int, int]] | None:
    """(dimension, index expression, largest pattern index, size) for each storage dimension
    (HBM: all; on-chip: the free ones) when the pattern walks the tensor's own dimensions
    (as slicing produces); None for any other pattern, which is checked against storage.
    The indices are the offset's parts over the tensor's strides, settled over `ranges`."""
    t = ap.tensor
    if ap.dtype != t.dtype:
        return None
    first = 1 if t.on_chip else 0
    dims = t.shape[first:]
    full = offsets.strides(t.shape)
    strides = full[first:]  # the strides of `dims` on their own
    extent = [0] * len(dims)
    d = 0
    for step, num in ap.pattern[first:]:
        while d < len(dims) and strides[d] != step:
            d += 1
        if d == len(dims) or num > dims[d]:
            return None
        extent[d] = num - 1
        d += 1
    indices = offsets.split(ap.offset, full, ranges)[first:]
    return [(first + d, indices[d], extent[d], dims[d]) for d in range(len(dims))]


@dataclass(frozen=True)
class CheckBounds(Pass):
    """Reports `err_tensor_access_out_of_bound` for accesses outside a tensor's storage."""

    name: ClassVar[str] = "check-bounds"
    local = True

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        registers = None
        # accesses outside loops at a constant pattern found in bounds, by the tensor's
        # buffer, shape and dtype (all the check reads of it): an unrolled kernel repeats its
        # tiles' patterns, each iteration on tiles of its own
        clean: set[tuple] = set()
        for op, loops in kernel.walk():
            if isinstance(op, Inst) and runs(loops):
                by_var = {lp.var: lp for lp in loops}
                for operand, ap in op.aps():
                    if ap.dynamic is None:
                        fixed = not loops and not ap.offset.terms
                        if fixed:
                            t = ap.tensor
                            key = (
                                t.buffer,
                                t.shape,
                                t.dtype,
                                ap.offset.const,
                                ap.pattern,
                                ap.dtype,
                            )
                            if key in clean:
                                continue
                        if not self.check(op, operand, ap, by_var, ctx) and fixed:
                            clean.add(key)
                    elif ap.dynamic.kind == "scalar":  # else checked at run time
                        if registers is None:  # once: it walks the whole kernel
                            registers = register_ranges(kernel)
                        self.check_register(op, operand, ap, by_var, registers, ctx)

    def check_register(self, op: Inst, operand: str, ap: AccessPattern, loops, registers, ctx):
        """An access at a register offset whose register holds values known at compile
        time (a dynamic loop's counter, an immediate, `+ - *` of those): its first and last
        element for the least and the largest value (the rest is checked at run time)."""
        index = op.operands.get(ap.dynamic.index)
        r = registers.get(index.tensor) if isinstance(index, AccessPattern) else None
        if r is None or not r.exact:
            return
        t = ap.tensor
        unit = ap.dynamic.step(t, ap.itemsize)
        size = t.size * t.itemsize // ap.itemsize
        lo, hi = ap.offset.bounds(loop_ranges(list(loops.values())))
        span = sum((num - 1) * step for step, num in ap.pattern)
        for value in (r.lo, r.hi):
            first, last = lo + value * unit, hi + value * unit + span
            if first < 0 or last >= size:
                ctx.sink.error(
                    CODE,
                    f"out-of-bound access to tensor '{t.label or t.name}' by operand "
                    f"'{operand}' of {op.opcode}: at scalar_offset {value} (the register "
                    f"takes [{r.lo}, {r.hi}]) it reaches elements [{first}, {last}], the "
                    f"tensor has [0, {size - 1}]",
                    op.loc,
                    hint="keep the register offset and the pattern inside the tensor of shape "
                    f"{list(t.shape)}: check the loop bounds and the offset arithmetic",
                )
                return

    def check(
        self, op: Inst, operand: str, ap: AccessPattern, loops: dict[str, Loop], ctx: PassContext
    ) -> bool:
        """Report `ap` if it leaves its tensor in some iteration; whether it was reported."""
        t = ap.tensor
        ranges = loop_ranges(list(loops.values()))
        r = region(ap, ranges)
        # (what, what it has, index expression, lowest and highest pattern index, extent); the
        # wording is filled in only for a failing check
        checks: list[tuple[str | int, str, Affine, int, int, int]] = []
        if t.on_chip:
            checks.append(
                (
                    "partitions",
                    "the tensor has partitions",
                    r.part,
                    r.part_lo,
                    r.part_hi,
                    t.num_partitions,
                )
            )
        dims = dimension_indices(ap, ranges)
        if dims is not None:
            checks += [
                (d, "the dimension has indices", expr, 0, ext, size) for d, expr, ext, size in dims
            ]
        elif t.on_chip:
            checks.append(
                (
                    "elements of each partition",
                    "a partition holds elements",
                    r.free,
                    r.free_lo,
                    r.free_hi,
                    row_elems(ap),
                )
            )
        else:
            size = t.size * t.itemsize // ap.itemsize
            checks.append(
                ("elements", "the tensor has elements", r.free, r.free_lo, r.free_hi, size)
            )
        reported = False
        for what, has, expr, lo_ext, hi_ext, extent in checks:
            lo, hi = expr.bounds(ranges)
            lo, hi = lo + lo_ext, hi + hi_ext
            if lo >= 0 and hi < extent:
                continue
            reported = True
            if isinstance(what, int):
                what = f"indices of dimension {what}"
            if hi >= extent:
                when = failing_iterations(expr + hi_ext, extent - 1, loops, upper=True)
            else:
                when = failing_iterations(expr + lo_ext, 0, loops, upper=False)
            name = f"'{t.label or t.name}'"
            unit = f" (in {ap.dtype} elements)" if ap.dtype != t.dtype else ""
            ctx.sink.error(
                CODE,
                f"out-of-bound access to tensor {name} by operand '{operand}' of {op.opcode}: "
                f"{what} [{lo}, {hi}] accessed{unit}, {has} [0, {extent - 1}]; out of bounds "
                f"{when}",
                op.loc,
                hint="shrink the slice or the loop range so that every iteration stays "
                f"inside {t.buffer} tensor {name} of shape {list(t.shape)}",
            )
        return reported
