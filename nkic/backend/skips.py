"""Per-iteration semaphore skips: the latest conflicting producer instance, affine in the
consumer's loop variables (docs/neff-format.md `waits`).

A consumer instance at loop values v waits for producer instance X(v); the skip is
N(v) - 1 - X(v), N(v) being how many producer instances are issued before it. X(v) is built
level by level over the producer's loops (outermost first): the levels above the one that
carries the dependency are fixed, and each level below takes the smallest affine candidate
(from the access offsets, "same as the consumer", or the last iteration) such that interval
arithmetic proves no later instance of that block conflicts. Waiting for a newer instance than
needed is always safe, so every candidate is sound; loops are never enumerated.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import floor

from ..ir.affine import Affine
from ..ir.core import Loop
from ..passes.regions import Region, loop_ranges

Ranges = dict[str, tuple[int, int]]


class Lin:
    """An affine expression with rational coefficients over consumer loop variables."""

    __slots__ = ("const", "terms")

    def __init__(self, const=0, terms: dict[str, Fraction] | None = None):
        self.const = Fraction(const)
        self.terms = {v: Fraction(c) for v, c in (terms or {}).items() if c}

    @staticmethod
    def of(a: Affine) -> Lin:
        return Lin(a.const, dict(a.terms))

    def __add__(self, o: Lin) -> Lin:
        terms = dict(self.terms)
        for v, c in o.terms.items():
            terms[v] = terms.get(v, 0) + c
        return Lin(self.const + o.const, terms)

    def __sub__(self, o: Lin) -> Lin:
        return self + o * -1

    def __mul__(self, k) -> Lin:
        return Lin(self.const * k, {v: c * k for v, c in self.terms.items()})

    def bounds(self, ranges: Ranges) -> tuple[Fraction, Fraction]:
        lo = hi = self.const
        for v, c in self.terms.items():
            a, b = ranges[v]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def affine(self) -> Affine | int | None:
        """The expression with integer coefficients (an int when constant), or None."""
        if self.const.denominator != 1 or any(c.denominator != 1 for c in self.terms.values()):
            return None
        if not self.terms:
            return int(self.const)
        return Affine(int(self.const), {v: int(c) for v, c in self.terms.items()})


@dataclass(frozen=True)
class Pin:
    """A producer loop variable during one check: its value is `expr` (over consumer
    variables) plus an offset in [lo, hi]."""

    expr: Lin
    lo: Fraction
    hi: Fraction

    @staticmethod
    def at(expr: Lin) -> Pin:
        return Pin(expr, Fraction(0), Fraction(0))

    @staticmethod
    def free(lp: Loop) -> Pin:
        return Pin(Lin(), Fraction(lp.start), Fraction(lp.last))


def _dims(x: Region, y: Region):
    yield x.part, x.part_lo, x.part_hi, y.part, y.part_lo, y.part_hi
    yield x.free, x.free_lo, x.free_hi, y.free, y.free_lo, y.free_hi


def may_meet(x: Region, y: Region, level: dict[str, int], pins: list[Pin], ranges) -> bool:
    """May the consumer access x (its variables in `ranges`) touch what the producer access y
    touches, with the producer's loop variables pinned as `pins` (by level)?"""
    for xo, xlo, xhi, yo, ylo, yhi in _dims(x, y):
        diff = Lin.of(xo) - Lin(yo.const)
        dlo = dhi = Fraction(0)
        for var, c in yo.terms:
            pin = pins[level[var]]
            diff = diff - pin.expr * c
            a, b = -c * pin.lo, -c * pin.hi
            dlo, dhi = dlo + min(a, b), dhi + max(a, b)
        lo, hi = diff.bounds(ranges)
        if lo + dlo > yhi - xlo or hi + dhi < ylo - xhi:
            return False
    return True


def _offset_candidates(
    x: Region, y: Region, loops: tuple[Loop, ...], level, pins: list[Pin], k: int, ranges
) -> list[Lin]:
    """Upper bounds, affine in the consumer's variables, on the iteration index of producer
    loop k at which the accesses can still meet (one per dimension that moves with it)."""
    lp = loops[k]
    out = []
    for xo, xlo, xhi, yo, ylo, yhi in _dims(x, y):
        c = yo.coeff(lp.var)
        if not c:
            continue
        # x - y ∈ [ylo - xhi, yhi - xlo] with y = e + c·(start + step·u) + rest
        e = Lin.of(xo) - Lin(yo.const + c * lp.start)
        rlo = rhi = Fraction(0)
        for var, cv in yo.terms:
            if var == lp.var:
                continue
            pin = pins[level[var]]
            e = e - pin.expr * cv
            a, b = cv * pin.lo, cv * pin.hi
            rlo, rhi = rlo + min(a, b), rhi + max(a, b)
        s = c * lp.step
        num = e - Lin(rlo + ylo - xhi) if s > 0 else (e - Lin(rhi + yhi - xlo)) * -1
        den = abs(s)
        whole, rest = {}, Lin(num.const)
        for v, cv in num.terms.items():
            q = cv / den
            if q.denominator == 1:
                whole[v] = q
            else:
                rest.terms[v] = cv
        out.append(Lin(floor(rest.bounds(ranges)[1] / den), whole))
    return out


@dataclass
class Scenario:
    """Producer pins for the levels down to the carrying one, and the consumer's ranges."""

    pins: list[Pin]
    ranges: Ranges


def _iteration(lp: Loop) -> Lin:
    """The iteration index of loop lp, (var - start) / step."""
    return Lin(Fraction(-lp.start, lp.step), {lp.var: Fraction(1, lp.step)})


def _scenarios(loops: tuple[Loop, ...], full: Ranges, carry: int, distance: int, merged: bool):
    """Where the blocks searched for the latest conflict lie: the same iteration of every
    common loop; `distance` executions of a rotation loop's body earlier (outer loops
    unknown); or one iteration of loop `carry` earlier — for its first iteration, the last
    iteration of an earlier execution of its body (`wrap`)."""
    if not distance:
        return [Scenario([Pin.at(Lin(0, {lp.var: 1})) for lp in loops[:carry]], full)]
    if merged:
        return [Scenario([Pin.free(lp) for lp in loops[: carry + 1]], full)]
    at = [Pin.at(Lin(0, {lp.var: 1})) for lp in loops[:carry]]
    lc = loops[carry]
    back = Fraction(-distance * lc.step)
    out = [
        Scenario(
            at + [Pin(Lin(0, {lc.var: 1}), back, back)],
            {**full, lc.var: (lc.start + distance * lc.step, lc.last)},
        )
    ]
    for i, li in enumerate(loops[:carry]):
        if li.trip_count < 2:
            continue
        earlier = Pin(Lin(0, {li.var: 1}), Fraction(li.start - li.last), Fraction(-li.step))
        pins = at[:i] + [earlier] + [Pin.free(lp) for lp in loops[i + 1 : carry]]
        ranges = {**full, li.var: (li.start + li.step, li.last), lc.var: (lc.start, lc.start)}
        out.append(Scenario(pins + [Pin.at(Lin(lc.last))], ranges))
    return out


def exact_skip(
    x: Region,
    c_loops: tuple[Loop, ...],
    y: Region,
    p_loops: tuple[Loop, ...],
    carry: int,
    distance: int,
    merged: bool,
    p_first: bool,
) -> Affine | int | None:
    """`_exact_skip`, remembered by the shape of the question: the loops' bounds, the regions
    with loop variables named by their position and offsets relative to each other (the
    answer depends only on the difference of the two accesses). The same pair of accesses in
    every execution of an outer loop that was unrolled asks the same question."""
    names: dict[str, str] = {}
    for i, lp in enumerate(c_loops):
        names[lp.var] = f"c{i}"
    for k, lp in enumerate(p_loops):
        names.setdefault(lp.var, f"p{k}")
    try:
        key = (
            tuple((lp.start, lp.stop, lp.step) for lp in c_loops),
            tuple((names[lp.var], lp.start, lp.stop, lp.step) for lp in p_loops),
            x.part.const - y.part.const,
            x.free.const - y.free.const,
            *(tuple((names[v], c) for v, c in a.terms) for a in (x.part, x.free, y.part, y.free)),
            (x.part_lo, x.part_hi, x.free_lo, x.free_hi, y.part_lo, y.part_hi, y.free_lo),
            (y.free_hi, carry, distance, merged, p_first),
        )
    except KeyError:  # a variable of no enclosing loop: ask directly
        return _exact_skip(x, c_loops, y, p_loops, carry, distance, merged, p_first)
    if key in _SKIPS:
        found = _SKIPS[key]
        if not isinstance(found, Affine):
            return found
        real = {f"c{i}": lp.var for i, lp in enumerate(c_loops)}
        return Affine(found.const, {real[v]: c for v, c in found.terms})
    out = _exact_skip(x, c_loops, y, p_loops, carry, distance, merged, p_first)
    if len(_SKIPS) >= _MAX_SKIPS:
        _SKIPS.clear()
    if isinstance(out, Affine):
        if any(v not in names or not names[v].startswith("c") for v in out.vars):
            return out
        _SKIPS[key] = Affine(out.const, {names[v]: c for v, c in out.terms})
    else:
        _SKIPS[key] = out
    return out


#: `exact_skip` answers by the shape of their question (bounded: cleared when full)
_SKIPS: dict[tuple, Affine | int | None] = {}
_MAX_SKIPS = 200_000


def _exact_skip(
    x: Region,
    c_loops: tuple[Loop, ...],
    y: Region,
    p_loops: tuple[Loop, ...],
    carry: int,
    distance: int,
    merged: bool,
    p_first: bool,
) -> Affine | int | None:
    """The skip of the wait for the latest producer instance that may conflict, or None when
    it is not affine (or not provably safe).

    `carry`: the common loop level at which the latest conflict lies, `distance` executions
    of its body earlier (0: the same iteration of every common loop; then `carry` is the
    number of common loops). `merged`: the levels down to `carry` count as one (a
    multi-buffered tensor's slot repeats every `distance` executions of the rotation loop's
    body, whatever the outer loops do). `p_first`: the producer precedes the consumer in
    program order.
    """
    n = len(p_loops)
    d = 0
    while d < min(len(c_loops), n) and c_loops[d] is p_loops[d]:
        d += 1
    level = {lp.var: i for i, lp in enumerate(p_loops)}
    weight = [1] * n
    for i in range(n - 2, -1, -1):
        weight[i] = weight[i + 1] * p_loops[i + 1].trip_count
    per_iteration = weight[d - 1] if d else weight[0] * p_loops[0].trip_count if n else 1
    full = loop_ranges(c_loops)
    scenarios = _scenarios(p_loops, full, carry, distance, merged)
    first = carry + 1 if distance else carry
    chosen: dict[int, Lin] = {}
    for k in range(first, n):
        lp = p_loops[k]
        cands = []
        for sc in scenarios:
            pins = _pins(sc, chosen, p_loops)
            cands += _offset_candidates(x, y, p_loops, level, pins, k, full)
        if k < d:
            cands.append(_iteration(lp))
        chosen[k] = next(
            u
            for u in _clamped(cands, lp, full) + [Lin(lp.trip_count - 1)]
            if all(
                _later_free(x, y, p_loops, level, _pins(sc, chosen, p_loops), k, u, sc, full)
                for sc in scenarios
            )
        )
    skip = Lin(distance * weight[carry] if distance else 0)
    for k in range(first, d):
        skip = skip + (_iteration(p_loops[k]) - chosen[k]) * weight[k]
    skip = skip + Lin((per_iteration if p_first else 0) - 1)
    for k in range(max(first, d), n):
        skip = skip - chosen[k] * weight[k]
    out = skip.affine()
    if out is None or skip.bounds(full)[0] < 0:
        return None
    return out


def _clamped(cands: list[Lin], lp: Loop, ranges: Ranges) -> list[Lin]:
    """Candidates that never name an iteration before the first, and not always the last."""
    return [u for u in cands if 0 <= u.bounds(ranges)[0] < lp.trip_count - 1]


def _pins(sc: Scenario, chosen: dict[int, Lin], loops: tuple[Loop, ...]) -> list[Pin]:
    pins = list(sc.pins)
    for k in range(len(pins), len(loops)):
        lp = loops[k]
        pins.append(Pin.at(Lin(lp.start) + chosen[k] * lp.step) if k in chosen else Pin.free(lp))
    return pins


def _later_free(x, y, loops, level, pins: list[Pin], k: int, u: Lin, sc: Scenario, full) -> bool:
    """No producer instance of the block whose loop k is past iteration u meets the consumer."""
    lp = loops[k]
    past = lp.last - (lp.start + lp.step * u.bounds(full)[0])
    if past < lp.step:
        return True
    pins[k] = Pin(Lin(lp.start) + u * lp.step, Fraction(lp.step), Fraction(past))
    return not may_meet(x, y, level, pins, sc.ranges)
