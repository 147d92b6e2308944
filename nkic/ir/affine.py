"""Affine index expressions over loop induction variables: c + sum(coeff * var)."""

from __future__ import annotations

from collections.abc import Mapping


class Affine:
    """An immutable affine expression with integer coefficients.

    Variables are loop induction variable names (without sigil). Expressions are kept in a
    canonical form (zero coefficients dropped, variables sorted) so that equality is structural.
    """

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: Mapping[str, int] | None = None):
        self.const = int(const)
        self.terms: tuple[tuple[str, int], ...] = (
            tuple(sorted((v, int(c)) for v, c in terms.items() if c != 0)) if terms else ()
        )

    @staticmethod
    def _make(const: int, terms: tuple[tuple[str, int], ...]) -> Affine:
        """An expression from terms already in canonical form."""
        out = Affine.__new__(Affine)
        out.const = const
        out.terms = terms
        return out

    @staticmethod
    def var(name: str) -> Affine:
        return Affine(0, {name: 1})

    @staticmethod
    def of(x: int | Affine) -> Affine:
        return x if isinstance(x, Affine) else Affine(int(x))

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def vars(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.terms)

    def coeff(self, var: str) -> int:
        return dict(self.terms).get(var, 0)

    def __add__(self, other: int | Affine) -> Affine:
        if type(other) is int:
            return Affine._make(self.const + other, self.terms) if other else self
        o = Affine.of(other)
        if not o.terms:
            return self if not o.const else Affine._make(self.const + o.const, self.terms)
        if not self.terms:
            return Affine._make(self.const + o.const, o.terms)
        terms = dict(self.terms)
        for v, c in o.terms:
            terms[v] = terms.get(v, 0) + c
        return Affine(self.const + o.const, terms)

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return Affine._make(-self.const, tuple((v, -c) for v, c in self.terms))

    def __sub__(self, other: int | Affine) -> Affine:
        if type(other) is int:
            return Affine._make(self.const - other, self.terms) if other else self
        return self + (-Affine.of(other))

    def __rsub__(self, other: int | Affine) -> Affine:
        return Affine.of(other) - self

    def __mul__(self, k: int) -> Affine:
        if isinstance(k, Affine):
            if k.is_const:
                k = k.const
            elif self.is_const:
                return k * self.const
            else:
                raise NonAffineError("product of two index expressions is not affine")
        if type(k) is not int:
            return Affine(self.const * k, {v: c * k for v, c in self.terms})
        if k == 1:
            return self
        if k == 0:
            return Affine._make(0, ())
        return Affine._make(self.const * k, tuple((v, c * k) for v, c in self.terms))

    __rmul__ = __mul__

    def floordiv(self, k: int) -> Affine:
        """Exact division: only when every coefficient and the constant divide by k."""
        if k == 0:
            raise ZeroDivisionError("integer division by zero")
        if self.const % k or any(c % k for _, c in self.terms):
            raise NonAffineError("division of an index expression that is not exact")
        return Affine(self.const // k, {v: c // k for v, c in self.terms})

    def substitute(self, env: Mapping[str, int | Affine]) -> Affine:
        out = Affine(self.const)
        for v, c in self.terms:
            out = out + (Affine.of(env[v]) * c if v in env else Affine(0, {v: c}))
        return out

    def evaluate(self, env: Mapping[str, int]) -> int:
        return self.const + sum(c * env[v] for v, c in self.terms)

    def bounds(self, ranges: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
        """Inclusive [lo, hi] over variables ranging over inclusive intervals."""
        lo = hi = self.const
        for v, c in self.terms:
            a, b = ranges[v]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            other = Affine(other)
        return isinstance(other, Affine) and (self.const, self.terms) == (other.const, other.terms)

    def __hash__(self) -> int:
        return hash((self.const, self.terms))

    def __repr__(self) -> str:
        return f"Affine({self})"

    def __str__(self) -> str:
        parts = []
        for v, c in self.terms:
            parts.append(f"${v}" if c == 1 else f"{c}*${v}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")


class NonAffineError(ValueError):
    """An index computation that cannot be expressed as an affine expression."""
