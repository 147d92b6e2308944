"""Builds a Kernel op by op: the frontend's only way to create IR."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .affine import Affine
from .core import (
    AccessPattern,
    Alloc,
    DynLoop,
    Imm,
    Inst,
    Kernel,
    Loc,
    Loop,
    Op,
    Operand,
    Tensor,
    UnrolledLoop,
)


class Builder:
    """Appends ops at an insertion point; `loop()` opens a nested body."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self._blocks: list[list[Op]] = [kernel.body]
        self._tensor_ids = 0
        self._loop_ids = 0
        self._unrolled: list[tuple[UnrolledLoop, int]] = []
        #: (source name, value) of the unrolled loops being run, outermost first (`Inst.iteration`)
        self.iteration: tuple[tuple[str, int], ...] = ()
        #: instructions and allocations built so far, removed ones included
        self.built = 0

    @property
    def block(self) -> list[Op]:
        return self._blocks[-1]

    def _tensor_name(self) -> str:
        name = f"t{self._tensor_ids}"
        self._tensor_ids += 1
        return name

    def param(
        self, buffer: str, dtype: str, shape: tuple[int, ...], label: str, loc: Loc
    ) -> Tensor:
        t = Tensor(self._tensor_name(), buffer, dtype, shape, label, "input", loc)
        self.kernel.params.append(t)
        return t

    def alloc(
        self,
        buffer: str,
        dtype: str,
        shape: tuple[int, ...],
        label: str,
        loc: Loc,
        address: tuple[int, int] | None = None,
    ) -> Tensor:
        t = Tensor(
            self._tensor_name(),
            buffer,
            dtype,
            shape,
            label,
            "internal",
            loc,
            address=address,
            fixed_address=address is not None,
        )
        self.block.append(Alloc(t, loc))
        self.built += 1
        return t

    def inst(
        self,
        opcode: str,
        operands: dict[str, Operand],
        attrs: dict | None,
        loc: Loc,
    ) -> Inst:
        op = Inst(opcode, operands, dict(attrs or {}), loc)  # (Inst copies the operands)
        op.unrolled = tuple(self._unrolled)
        op.iteration = self.iteration
        self.block.append(op)
        self.built += 1
        return op

    @contextmanager
    def unrolled_iteration(self, loop: UnrolledLoop, value: int) -> Iterator[None]:
        """Instructions built inside belong to iteration `value` of the unrolled affine `loop`."""
        self._unrolled.append((loop, value))
        try:
            yield
        finally:
            self._unrolled.pop()

    @contextmanager
    def loop(self, start: int, stop: int, step: int, mode: str, loc: Loc) -> Iterator[Affine]:
        """Open a loop body; yields the induction variable as an affine expression."""
        var = f"i{self._loop_ids}"
        self._loop_ids += 1
        op = Loop(var, start, stop, step, mode, [], loc)
        self.block.append(op)
        self._blocks.append(op.body)
        try:
            yield Affine.var(var)
        finally:
            self._blocks.pop()

    @contextmanager
    def dynamic_loop(
        self, kind: str, start, stop, step: int, counter, cond, loc: Loc
    ) -> Iterator[DynLoop]:
        """Open the body of a loop whose trip count is read at run time (`DynLoop`)."""
        var = f"i{self._loop_ids}"
        self._loop_ids += 1
        op = DynLoop(var, kind, start, stop, step, counter, cond, [], loc)
        self.block.append(op)
        self._blocks.append(op.body)
        try:
            yield op
        finally:
            self._blocks.pop()

    def mark_output(self, tensor: Tensor, view: tuple | None = None) -> None:
        """Return `tensor`, or `view` of it: (shape, element offset, element strides)."""
        tensor.kind = "output" if tensor.kind != "input" else tensor.kind
        self.kernel.returns.append(tensor)
        self.kernel.return_views.append(view)


def whole(tensor: Tensor) -> AccessPattern:
    """An access pattern covering all of `tensor`."""
    return AccessPattern(tensor, Affine(0), tensor.full_pattern(), tensor.dtype)


def imm(value) -> Imm:
    return Imm(value)
