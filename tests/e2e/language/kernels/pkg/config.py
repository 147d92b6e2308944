"""Configuration of the package's kernels (plain Python: the tests import it too)."""

from dataclasses import dataclass
from enum import Enum


class Act(Enum):
    COPY = "copy"
    EXP = "exp"
    RELU = "relu"


@dataclass(frozen=True)
class BlockConfig:
    width: int = 128
    scale: float = 1.0
    act: Act = Act.COPY

    def blocks(self, free):
        assert free % self.width == 0, f"{free} columns are not a multiple of {self.width}"
        return free // self.width
