"""What the cost rules know of an instruction: its op, engine, attrs and operand layouts."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

from nkirt import dtypes
from nkirt.cost.tables import WIDE_STRIDE_BYTES


@dataclass(frozen=True)
class OperandShape:
    """An access-pattern operand as the hardware sees it (independent of the loop iteration)."""

    buffer: str  # "hbm" (also for shared_hbm), "sbuf" or "psum"
    dtype: str
    #: The AP's `num`s and `step`s (elements), outermost first; dim 0 is the partition dim on chip.
    nums: tuple[int, ...]
    steps: tuple[int, ...]
    #: Partitions advanced per step of dim 0 (on chip): 1 for a plain tile, 0 for a broadcast.
    partition_step: int = 1

    @property
    def on_chip(self) -> bool:
        return self.buffer != "hbm"

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def elements(self) -> int:
        return prod(self.nums)

    @property
    def partitions(self) -> int:
        return self.nums[0] if self.on_chip else 1

    @property
    def free_elems(self) -> int:
        """Elements per partition (the N of the cost formulas)."""
        return prod(self.nums[1:]) if self.on_chip else self.elements

    @property
    def free_dims(self) -> tuple[tuple[int, int], ...]:
        pairs = tuple(zip(self.steps, self.nums))
        return pairs[1:] if self.on_chip else pairs

    @property
    def unit_stride(self) -> bool:
        """Whether the innermost free dimension that moves is contiguous."""
        moving = [step for step, num in self.free_dims if num > 1]
        return not moving or abs(moving[-1]) == 1

    @property
    def wide_stride(self) -> bool:
        """Hardware §8: an innermost stride above 16 bytes halves the SBUF/PSUM access bandwidth."""
        moving = [step for step, num in self.free_dims if num > 1]
        return bool(moving) and abs(moving[-1]) * self.itemsize > WIDE_STRIDE_BYTES

    def contiguous_run(self) -> int:
        """Elements per contiguous run of memory, counted inside one partition on chip."""
        run = 1
        for step, num in reversed(self.free_dims):
            if num == 1:
                continue
            if step != run:
                break
            run *= num
        return run


@dataclass(frozen=True)
class InstructionShape:
    """One static instruction, described for the cost rules."""

    op: str
    engine: str
    attrs: dict[str, Any]
    operands: dict[str, OperandShape]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    immediates: dict[str, Any] = field(default_factory=dict)

    def inputs(self) -> list[OperandShape]:
        return [self.operands[n] for n in self.reads if n in self.operands]

    def free_elems(self) -> int:
        """N: elements per partition streamed, the largest over the tile operands."""
        return max((o.free_elems for o in self.operands.values()), default=1)

    def param(self, name: str, default: Any = None) -> Any:
        """An instruction parameter given as an immediate operand or as an attribute."""
        if name in self.immediates:
            return self.immediates[name]
        return self.attrs.get(name, default)
