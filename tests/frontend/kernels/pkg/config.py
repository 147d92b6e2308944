"""Configuration shared by the package's kernels."""

from dataclasses import dataclass
from enum import Enum


class Activation(Enum):
    IDENTITY = "copy"
    EXP = "exp"


@dataclass(frozen=True)
class TileConfig:
    rows: int = 128
    cols: int = 256
    act: Activation = Activation.IDENTITY

    @property
    def elems(self):
        return self.rows * self.cols
