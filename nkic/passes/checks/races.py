"""Dependencies between iterations of `affine_range` loops (iterations may run in any order).

For two accesses to one tensor (at least one a write) in the body of an affine loop over `i`,
the accesses collide when, on every dimension, `start_a(i) - start_b(i')` falls inside the
overlap window of their extents for some `i != i'`. With equal coefficients of `i` the
difference is linear in `k = (i - i') / step` and solved as an interval of `k` per dimension;
other cases are decided on a few boundary iterations. Loop trip counts are never enumerated.
Tensors allocated inside the loop are private to an iteration; PSUM matmul accumulation over
the loop variable is an associative reduction and allowed.

An affine loop the frontend unrolled (its body needed the induction variable at compile time)
is straight-line code whose instructions carry the loop execution and iteration they came from
(`Inst.unrolled`); its iterations are compared pairwise, after a sweep over byte ranges picks
the candidate pairs, so the check stays near-linear in the number of accesses.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass

from ...diagnostics import Diagnostic, Related, source_line
from ...ir.affine import Affine
from ...ir.core import Alloc, Kernel, Loc, Loop, UnrolledLoop
from ..base import Pass, PassContext
from ..bounds import dimension_indices
from ..regions import loop_ranges
from .accesses import Access, shared_accesses
from .regions import comparable, convert, describe, footprint

_WITNESS_EDGE = 16  # iterations tried at each end of the loop when coefficients differ
_WITNESS_K = 64  # iteration distances tried near 0 and near the largest feasible distances


@dataclass(frozen=True)
class AffineRaces(Pass):
    """Reports `err_unexpected_output_dependencies` in `affine_range` loops."""

    name = "affine-races"

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        # a runtime offset (gather/scatter) cannot be compared statically: not checked
        everything = [
            a for a in shared_accesses(kernel, ctx) if a.reachable and a.ap.dynamic is None
        ]
        # the accesses inside each loop, found once (unrolled code holds thousands of loops)
        within: dict[int, list[Access]] = {}
        for a in everything:
            for lp in a.loops:
                within.setdefault(id(lp), []).append(a)
        for op, outer in kernel.walk():
            if isinstance(op, Loop) and op.mode == "affine" and op.trip_count >= 2:
                _check_loop(ctx, op, len(outer), within.get(id(op), []))
        _check_unrolled(ctx, everything)


def _check_loop(ctx: PassContext, loop: Loop, depth: int, candidates: list[Access]) -> None:
    """Races between iterations of `loop` (at nesting `depth`) among `candidates`, the
    accesses inside it in program order."""
    private = {id(o.result) for o in _ops(loop.body) if isinstance(o, Alloc)}
    inside = [
        a
        for a in candidates
        if len(a.loops) > depth and a.loops[depth] is loop and not _out_of_bounds(a)
    ]
    by_tensor: dict[int, list[Access]] = {}
    for a in inside:
        if id(a.ap.tensor) not in private:
            by_tensor.setdefault(id(a.ap.tensor), []).append(a)
    for items in by_tensor.values():
        for x, a in enumerate(items):
            found = None
            for b in items[x:]:
                if not (a.write or b.write) or (a.accumulates and b.accumulates):
                    continue
                witness = _collide(loop, depth, a, b)
                if witness is not None:
                    found = (b, witness)
                    break
            if found:
                _report(ctx, loop, depth, a, *found)
                break


def _out_of_bounds(a: Access) -> bool:
    """Whether a slice-like access leaves its tensor's dimensions in some iteration. Such an
    access is `err_tensor_access_out_of_bound` (check-bounds); here its footprint would fall
    back to the whole storage and report collisions between iterations that do not overlap."""
    dims = dimension_indices(a.ap)
    if dims is None:
        return False
    ranges = loop_ranges(a.loops)
    for _, expr, ext, size in dims:
        lo, hi = expr.bounds(ranges)
        if lo < 0 or hi + ext >= size:
            return True
    return False


def _ops(body):
    for op in body:
        yield op
        if isinstance(op, Loop):
            yield from _ops(op.body)


@dataclass(frozen=True)
class _Dim:
    """One dimension of a collision: `ca*i - cb*i' + const + L` must lie in `[lo, hi]`, where
    `L` (the other loop variables' contribution) is a multiple of `g` within `[l_lo, l_hi]`."""

    ca: int
    cb: int
    const: int
    g: int
    l_lo: int
    l_hi: int
    lo: int
    hi: int

    def feasible(self, shift: int) -> bool:
        """Whether some admissible `L` puts `shift + const + L` inside the window."""
        lo = max(self.lo - self.const - shift, self.l_lo)
        hi = min(self.hi - self.const - shift, self.l_hi)
        if lo > hi:
            return False
        if self.g == 0:
            return lo <= 0 <= hi
        return -(-lo // self.g) * self.g <= hi


def _dimension(sa: Affine, ea: int, sb: Affine, eb: int, var: str, outer: set[str], ra, rb) -> _Dim:
    free: list[tuple[int, tuple[int, int]]] = []  # (coefficient, variable range) of L's terms
    for v in {*sa.vars, *sb.vars} - {var}:
        if v in outer:  # shared by both iterations: only the coefficient difference remains
            free.append((sa.coeff(v) - sb.coeff(v), ra[v]))
        else:
            free.append((sa.coeff(v), ra[v]) if v in sa.vars else (0, (0, 0)))
            free.append((-sb.coeff(v), rb[v]) if v in sb.vars else (0, (0, 0)))
    g, l_lo, l_hi = 0, 0, 0
    for c, (vlo, vhi) in free:
        g = math.gcd(g, c)
        l_lo += min(c * vlo, c * vhi)
        l_hi += max(c * vlo, c * vhi)
    return _Dim(sa.coeff(var), sb.coeff(var), sa.const - sb.const, g, l_lo, l_hi, -ea, eb)


def _collide(loop: Loop, depth: int, a: Access, b: Access) -> tuple[int, int] | None:
    """Iterations `(i, i')`, `i != i'`, in which `a` and `b` may touch a common element."""
    ra, rb = loop_ranges(a.loops), loop_ranges(b.loops)
    fa, fb = comparable(footprint(a.ap, ra), footprint(b.ap, rb))
    outer = {lp.var for lp in a.loops[:depth]}
    dims = [
        _dimension(sa, ea, sb, eb, loop.var, outer, ra, rb)
        for sa, ea, sb, eb in zip(fa.starts, fa.extents, fb.starts, fb.extents)
    ]
    if all(d.ca == d.cb for d in dims):
        return _solve_equal(loop, dims)
    return _search(loop, dims)


def _solve_equal(loop: Loop, dims: list[_Dim]) -> tuple[int, int] | None:
    """With equal coefficients the collision depends only on `k = (i - i') / step`."""
    kmax = loop.trip_count - 1
    lo, hi = -kmax, kmax
    for d in dims:
        step = d.ca * loop.step
        if step == 0:
            continue
        a, b = sorted(((d.lo - d.const - d.l_hi) / step, (d.hi - d.const - d.l_lo) / step))
        lo, hi = max(lo, math.ceil(a)), min(hi, math.floor(b))
    if lo > hi:
        return None
    # the lattice condition is periodic in k: try the k nearest to 0 and to both ends
    near = [k for r in range(1, _WITNESS_K + 1) for k in (r, -r)]
    ends = [*range(lo, lo + _WITNESS_K), *range(hi, hi - _WITNESS_K, -1)]
    for k in near + ends:
        if k and lo <= k <= hi and all(d.feasible(d.ca * k * loop.step) for d in dims):
            first = loop.start
            return (first + k * loop.step, first) if k > 0 else (first, first - k * loop.step)
    return None


def _search(loop: Loop, dims: list[_Dim]) -> tuple[int, int] | None:
    n = loop.trip_count
    picks = sorted(set(range(min(n, _WITNESS_EDGE))) | set(range(max(0, n - _WITNESS_EDGE), n)))
    values = [loop.start + p * loop.step for p in picks]
    for x in values:
        for y in values:
            if x != y and all(d.feasible(d.ca * x - d.cb * y) for d in dims):
                return x, y
    return None


def _report(ctx: PassContext, loop: Loop, depth: int, a: Access, b: Access, witness) -> None:
    ia, ib = witness
    if a.index == b.index:  # one access colliding with itself: name the earlier iteration first
        ia, ib = sorted(witness)

    def env(acc: Access, value: int) -> dict[str, tuple[int, int]]:
        """The iteration `value` of the loop, outer loops at their first iteration."""
        e = loop_ranges(acc.loops)
        for lp in acc.loops[:depth]:
            e[lp.var] = (lp.start, lp.start)
        e[loop.var] = (value, value)
        return e

    _error(ctx, _source_name(loop), loop.loc, (a, ia, env(a, ia)), (b, ib, env(b, ib)))


def _error(ctx: PassContext, v: str, loop_loc: Loc, first, second) -> None:
    """Report two accesses, each (access, iteration value, loop ranges to describe it with),
    that collide in different iterations of the loop over `v` at `loop_loc`."""
    (a, ia, ea), (b, ib, eb) = first, second
    ra, rb = describe(a.ap, ea), describe(b.ap, eb)
    if not a.write:
        a, b, ia, ib, ra, rb = b, a, ib, ia, rb, ra
    if b.write and ra == rb:
        what = f"iteration {v}={ia} and {v}={ib} both write {ra}"
    elif b.write:
        what = f"iteration {v}={ia} writes {ra} and iteration {v}={ib} writes {rb}, which overlap"
    else:
        what = f"iteration {v}={ia} writes {ra} while iteration {v}={ib} reads {rb}"
    if ctx.affine_dependency == "error":
        note = "iterations of this `affine_range` loop may run in any order"
        hint = (
            "give each iteration its own region (index with the loop variable), allocate the "
            "tile inside the loop, or use `nl.sequential_range` for a loop-carried dependency"
        )
    else:
        note = "this `affine_range` loop declares its iterations independent"
        hint = (
            "this NKI version runs `nl.affine_range` iterations in order, so the kernel "
            "computes the sequential result, but the loop promises independent iterations: a "
            "compiler that reorders them (Beta 1 does) computes something else. Use "
            "`nl.sequential_range` for a loop-carried dependency, or give each iteration its "
            "own region"
        )
    related = [Related(loop_loc, note)]
    if b.inst.loc != a.inst.loc:
        related.insert(0, Related(b.inst.loc, f"the other access ({b.inst.opcode} `{b.operand}`)"))
    ctx.sink.report(
        Diagnostic(
            "err_unexpected_output_dependencies",
            f"{a.inst.opcode}: {what}",
            a.inst.loc,
            ctx.affine_dependency,
            hint,
            related=tuple(related),
        )
    )


def _check_unrolled(ctx: PassContext, everything: list[Access]) -> None:
    """Races between the iterations of each unrolled affine loop execution; one report each."""
    groups: dict[UnrolledLoop, list[tuple[int, Access]]] = {}
    spans: dict[int, tuple[int, int]] = {}  # byte range of each access, shared by its groups
    for a in everything:
        if a.inst.unrolled and not _out_of_bounds(a):
            for loop, value in a.inst.unrolled:
                groups.setdefault(loop, []).append((value, a))
    for loop, items in groups.items():
        by_tensor: dict[int, list[tuple[int, Access]]] = {}
        for value, a in items:
            by_tensor.setdefault(id(a.ap.tensor), []).append((value, a))
        for tensor_items in by_tensor.values():
            pair = _unrolled_collision(tensor_items, spans)
            if pair is not None:
                (ia, a), (ib, b) = sorted(pair, key=lambda item: (item[0], item[1].index))
                _error(ctx, loop.name, loop.loc, _first(a, ia), _first(b, ib))
                break


def _first(a: Access, value: int):
    """`a` in iteration `value` of its unrolled loop, its own loops over their whole range."""
    return a, value, loop_ranges(a.loops)


def _unrolled_collision(items: list[tuple[int, Access]], spans: dict[int, tuple[int, int]]):
    """Two (iteration, access) items of one tensor, from different iterations, at least one a
    write and not both matmul accumulations, that may touch a common byte; or None. A sweep
    over byte ranges offers each access the active writes whose ranges it meets (and each write
    the active reads too), so reads that only meet reads are never paired."""
    for _, a in items:
        if a.index not in spans:
            spans[a.index] = _byte_range(a)
    events = sorted(
        ((*spans[a.index], value, a) for value, a in items), key=lambda e: (e[0], e[3].index)
    )
    active: tuple[dict, dict] = ({}, {})  # reads, writes: access index -> (iteration, access)
    ends: list[tuple[int, int, bool]] = []  # (last byte, access index, is a write)
    for lo, hi, value, a in events:
        while ends and ends[0][0] < lo:
            _, index, write = heapq.heappop(ends)
            active[write].pop(index, None)
        others = [*active[True].values(), *(active[False].values() if a.write else ())]
        for other_value, b in others:
            if other_value != value and not (a.accumulates and b.accumulates) and _may_meet(a, b):
                return (value, a), (other_value, b)
        active[a.write][a.index] = (value, a)
        heapq.heappush(ends, (hi, a.index, a.write))
    return None


def _byte_range(a: Access) -> tuple[int, int]:
    ranges = loop_ranges(a.loops)
    (lo, hi), *_ = convert(footprint(a.ap, ranges), "flat").intervals(ranges)
    return lo, hi


def _may_meet(a: Access, b: Access) -> bool:
    """Whether some iteration of `a`'s loops and some of `b`'s (loops they share at equal
    values) touch a common element."""
    ra, rb = loop_ranges(a.loops), loop_ranges(b.loops)
    fa, fb = comparable(footprint(a.ap, ra), footprint(b.ap, rb))
    shared = {lp.var for lp in a.loops if any(lp is other for other in b.loops)}
    return all(
        _dimension(sa, ea, sb, eb, "", shared, ra, rb).feasible(0)
        for sa, ea, sb, eb in zip(fa.starts, fa.extents, fb.starts, fb.extents)
    )


def _source_name(loop: Loop) -> str:
    """The loop variable as the kernel spells it (`for i in ...`), else the IR name."""
    src = source_line(loop.loc.file, loop.loc.line)
    m = re.match(r"\s*for\s+([A-Za-z_]\w*)\s+in\b", src[loop.loc.col - 1 :]) if src else None
    return m.group(1) if m else loop.var
