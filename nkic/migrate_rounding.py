"""Whether the outputs of a Beta 1 kernel and of its migration that are not bit-identical
differ only by rounding the migration changed (`nkic migrate`'s verification, docs/migrate.md).

Two facts decide it. From the two compiled programs: the roundings each performs (which
instructions round their results to which float dtype, and the lengths of the reductions and
accumulations it computes); a rounding one program performs and the other does not is a
change the migration made. From the two runs: how far apart the outputs are, normwise
(`max |a - b| / max |a|` per output) and in units in the last place of the output dtype. The
outputs are *within tolerance* when the programs' roundings differ and the normwise
difference is at most the bound those changes allow:

* an instruction that rounds to a float dtype D in one program only: `4 u(D)`, `u` the unit
  roundoff (2^-8 for bfloat16, 2^-24 for float32);
* a reduction or accumulation over n elements in one program only (another length, another
  split, another order): `n u(float32)`, the classic bound of a float32 sum of n terms;
* plus `2 u(O)` for the final rounding to the output dtype O, which an exact value a hair
  apart can round to the neighbouring value.

The bound is the sum over the changes found (the largest n, the narrowest D). Without a
change the migration made, outputs that are not bit-identical differ: nothing explains them.
NaN and infinities must be in the same places with the same values, integer outputs must be
identical, and shapes must agree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

#: unit roundoff (half the distance from 1.0 to the next value) of each float dtype
UNIT_ROUNDOFF = {
    "float32": 2.0**-24,
    "tfloat32": 2.0**-11,
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
    "float8_e4m3": 2.0**-4,
    "float8_e4m3fn": 2.0**-4,
    "float8_e5m2": 2.0**-3,
}

#: instructions that move or rearrange values without arithmetic: they round only when they
#: convert to a narrower dtype
_COPIES = frozenset(
    {
        "dma_copy",
        "dma_transpose",
        "tensor_copy",
        "nc_transpose",
        "local_gather",
        "nc_stream_shuffle",
        "tensor_copy_predicated",
        "memset",
        "iota",
    }
)

#: instructions whose inputs are scaled products summed over the partition dimension
_CONTRACTIONS = frozenset({"nc_matmul", "nc_matmul_mx"})


@dataclass(frozen=True)
class Rounding:
    """What one compiled program rounds: per instruction, the float dtype each rounding result
    takes (`(opcode, dtype)`), and the reductions it computes (`(opcode, n)`: n values summed,
    maximised, ... into each result element)."""

    writes: frozenset[tuple[str, str]]
    reductions: frozenset[tuple[str, int]]

    @classmethod
    def of_ir(cls, text: str) -> Rounding:
        """The roundings of a compiled kernel's IR text (`CompiledKernel.ir`)."""
        from .ir import isa
        from .ir.core import Inst, Loop
        from .ir.parser import parse_kernel

        writes: set[tuple[str, str]] = set()
        reductions: Counter = Counter()

        def walk(ops):
            for op in ops:
                if isinstance(op, Loop):
                    walk(op.body)
                elif isinstance(op, Inst):
                    visit(op)
                elif hasattr(op, "then_body"):  # a run-time branch: both arms
                    walk(op.then_body)
                    walk(getattr(op, "else_body", []))

        def visit(inst):
            spec = isa.lookup(inst.opcode)
            roles = {p.name: p.role for p in spec.params} if spec else {}
            aps = dict(inst.aps())
            outs = [ap for name, ap in aps.items() if roles.get(name) == "out"]
            ins = [ap for name, ap in aps.items() if roles.get(name) in ("in", "ins")]
            if not outs:
                return
            widest_in = max((UNIT_ROUNDOFF.get(ap.dtype, 0.0) for ap in ins), default=None)
            for ap in outs:
                u = UNIT_ROUNDOFF.get(ap.dtype)
                if u is None:
                    continue  # an integer result: computed exactly or not at all alike
                narrows = widest_in is None or any(
                    UNIT_ROUNDOFF.get(i.dtype, 0.0) < u or i.dtype not in UNIT_ROUNDOFF for i in ins
                )
                if inst.opcode not in _COPIES or narrows:
                    writes.add((inst.opcode, ap.dtype))
            if inst.opcode in _CONTRACTIONS:
                stationary = aps.get("stationary")
                if stationary is not None and stationary.pattern:
                    reductions[(inst.opcode, stationary.pattern[0][1])] += 1
                return
            largest = max((_elements(ap) for ap in ins), default=0)
            for ap in outs:
                n = _elements(ap)
                if n and largest > n:
                    reductions[(inst.opcode, largest // n)] += 1

        walk(parse_kernel(text).body)
        return cls(frozenset(writes), frozenset(reductions))


def _elements(ap) -> int:
    n = 1
    for _, num in ap.pattern:
        n *= num
    return n


@dataclass(frozen=True)
class Change:
    """A rounding one program performs and the other does not."""

    what: str  # e.g. "tensor_tensor rounds to bfloat16 in the migrated kernel only"
    bound: float  # the normwise relative difference it can explain


def changes(before: Rounding, after: Rounding) -> list[Change]:
    """The roundings the migration changed, each with the difference it can explain."""
    found: list[Change] = []
    for side, mine, theirs in (
        ("migrated", after.writes, before.writes),
        ("original", before.writes, after.writes),
    ):
        for opcode, dtype in sorted(mine - theirs):
            found.append(
                Change(
                    f"{opcode} rounds to {dtype} in the {side} kernel only",
                    4 * UNIT_ROUNDOFF[dtype],
                )
            )
    lengths_before = {n for _, n in before.reductions}
    lengths_after = {n for _, n in after.reductions}
    for side, mine, theirs in (
        ("migrated", after.reductions, before.reductions),
        ("original", before.reductions, after.reductions),
    ):
        for opcode, n in sorted(mine - theirs):
            if n <= 1:
                continue
            other = sorted(lengths_before if side == "migrated" else lengths_after)
            found.append(
                Change(
                    f"{opcode} reduces {n} values per result in the {side} kernel only"
                    + (f" (the other's reductions: {_lengths(other)})" if other else ""),
                    n * UNIT_ROUNDOFF["float32"],
                )
            )
    return found


def _lengths(ns: list[int]) -> str:
    return ", ".join(str(n) for n in ns[:4]) + (", ..." if len(ns) > 4 else "")


@dataclass(frozen=True)
class Distance:
    """How far apart two runs' outputs are."""

    comparable: bool  # same number of outputs, shapes, dtypes, special values, integers
    max_abs: float
    max_rel: float  # max over outputs of max |a - b| / max |a| (finite elements)
    max_ulp: int  # units in the last place of the output dtype
    output_roundoff: float  # the largest unit roundoff of the outputs' dtypes
    why_not: str = ""


def distance(before: tuple, after: tuple) -> Distance:
    """The difference of the original's outputs `before` and the migrated kernel's `after`."""
    import ml_dtypes  # noqa: F401  (registers the bf16/fp8 numpy dtypes)

    if len(before) != len(after):
        return Distance(False, float("nan"), float("nan"), 0, 0.0, "a different number of outputs")
    max_abs = max_rel = 0.0
    max_ulp = 0
    roundoff = 0.0
    for a, b in zip(before, after):
        if a.shape != b.shape or a.dtype != b.dtype:
            return Distance(False, float("nan"), float("nan"), 0, 0.0, "outputs of another shape")
        u = UNIT_ROUNDOFF.get(str(a.dtype))
        if u is None:  # integers: no rounding to tolerate
            if a.tobytes() != b.tobytes():
                diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                return Distance(False, diff, float("nan"), 0, 0.0, "integer outputs differ")
            continue
        roundoff = max(roundoff, u)
        x, y = a.astype(np.float64), b.astype(np.float64)
        special = ~np.isfinite(x) | ~np.isfinite(y)
        if not np.array_equal(x[special], y[special], equal_nan=True):
            return Distance(False, float("nan"), float("nan"), 0, roundoff, "NaN or Inf moved")
        finite = ~special
        x, y = x[finite], y[finite]
        if x.size == 0:
            continue
        diff = float(np.max(np.abs(x - y)))
        scale = float(np.max(np.abs(x)))
        max_abs = max(max_abs, diff)
        max_rel = max(max_rel, diff / scale if scale else (0.0 if diff == 0 else float("inf")))
        max_ulp = max(max_ulp, _ulps(a[finite], b[finite]))
    return Distance(True, max_abs, max_rel, max_ulp, roundoff)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest number of representable values between elements of `a` and `b` (finite
    elements of one float dtype, alike shaped; -0 and +0 are one value)."""
    bits = 8 * a.dtype.itemsize
    kind = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[bits]
    magnitude = (1 << (bits - 1)) - 1

    def ordered(v):
        i = np.ascontiguousarray(v).view(kind).astype(np.int64)
        return np.where(i < 0, -(i & magnitude), i)  # sign-magnitude onto a number line

    return int(np.max(np.abs(ordered(a) - ordered(b)), initial=0))
