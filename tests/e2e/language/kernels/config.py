"""Python-side configuration for the class kernels: importable by the tests, passed to
kernels as arguments."""

from dataclasses import dataclass
from enum import Enum, IntEnum

import nki.language as nl


class Op(Enum):
    ADD = "add"
    MUL = "mul"
    MAX = "max"

    def alu(self):
        import nki.language as nl

        if self == Op.ADD:
            return nl.add
        if self == Op.MUL:
            return nl.multiply
        return nl.maximum


class Level(IntEnum):
    LOW = 1
    HIGH = 5


@dataclass
class Tiling:
    rows: int
    cols: int = 64
    scale: float = 1.0
    label: str = ""

    def __post_init__(self):
        self.label = f"{self.rows}x{self.cols}"

    @property
    def elems(self):
        return self.rows * self.cols

    def tiles(self, free):
        return free // self.cols

    def widen(self, k):
        self.cols *= k
        return self

    @staticmethod
    def half(v):
        return v / 2

    @classmethod
    def square(cls, n):
        return cls(n, n)


class Epilogue(nl.NKIObject):
    """x * scale + shift; `shift` defaults to `-scale` (synthesised __init__, __post_init__)."""

    scale: float = 1.0
    shift: float = None

    def __post_init__(self):
        if self.shift is None:
            self.shift = -self.scale

    def operands(self):
        return self.scale, self.shift


def square(v):
    """A host function passed to a kernel as a compile-time argument."""
    return v * v
