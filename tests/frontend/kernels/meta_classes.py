"""Classes: NKIObject subclasses, dataclasses, enums, methods, properties, __call__."""

from dataclasses import dataclass, field, replace
from enum import Enum, auto

import nki
import nki.language as nl


class Layout(Enum):
    ROW = auto()
    COL = auto()

    def flipped(self):
        return Layout.COL if self == Layout.ROW else Layout.ROW


class Color(Enum):
    RED = "r"
    GREEN = "g"


@dataclass
class Tiling:
    rows: int
    cols: int = 512
    tags: list = field(default_factory=list)
    layout: Layout = Layout.ROW

    def __post_init__(self):
        self.area = self.rows * self.cols

    @property
    def shape(self):
        return (self.rows, self.cols)

    def grow(self, k):
        self.rows *= k
        return self

    @staticmethod
    def unit():
        return Tiling(1, 1)

    @classmethod
    def square(cls, n):
        return cls(n, n)


@dataclass(frozen=True)
class Frozen:
    a: int = 1


class Counter(nl.NKIObject):
    count: int = 0
    step: int = None

    def bump(self):
        self.count += 1 if self.step is None else self.step
        return self.count

    def __call__(self, v):
        return v + self.count


class Base(nl.NKIObject):
    def __init__(self, v):
        self.v = v

    def describe(self):
        return f"base{self.v}"


class Derived(Base):
    def __init__(self, v, w):
        super().__init__(v)
        self.w = w

    def describe(self):
        return super().describe() + f"+{self.w}"


@nki.jit
def classes(x, layout=Layout.ROW):
    t = Tiling(128)
    assert t.cols == 512 and t.area == 128 * 512 and t.shape == (128, 512) and t.tags == []
    assert t.grow(2).rows == 256 and t.area == 128 * 512
    t.tags.append("a")
    assert Tiling.unit().area == 1 and Tiling.square(4).cols == 4
    assert (
        t
        == Tiling(
            256,
            512,
            ["a"],
            Layout.ROW,
        )
        or t.area == 128 * 512
    )
    assert Tiling(1) == Tiling(1) and Tiling(1) != Tiling(2)
    assert isinstance(t, Tiling) and not isinstance(t, Frozen)
    f = Frozen()
    g = replace(f, a=2)
    assert f.a == 1 and g.a == 2
    c = Counter()
    assert c.step is None and c.bump() == 1 and c.bump() == 2 and c(10) == 12
    c2 = Counter(step=5)
    assert c2.bump() == 5
    assert Derived(1, 2).describe() == "base1+2" and Base(3).describe() == "base3"
    assert layout == Layout.ROW and layout != Layout.COL and layout.flipped() == Layout.COL
    assert Layout.ROW.value == 1 and Layout.COL.value == 2 and Layout.COL.name == "COL"
    assert Color("g") == Color.GREEN and Color["RED"] == Color.RED
    assert [m.name for m in Color] == ["RED", "GREEN"] and len(Color) == 2
    assert isinstance(Color.RED, Color)
    table = {Color.RED.value: 1}
    assert table["r"] == 1
    assert t.layout in (Layout.ROW,)
