"""Beta 1 block scoping of tensors: an `if` / `else` / `for` block is the scope of the tensors
it defines. A name bound inside the block to a tensor created there cannot be read after the
block (`err_local_variable_used_out_of_scope`), also when the name held another tensor before
the block (`data = data + x` in a loop makes a new tensor; `data[...] = data + x` updates the
one before the loop). Tensors the block did not create (a kernel argument, a view of an outer
tile) stay visible, as does everything that is not a tensor.

Reference: the Beta 1 error catalogue,
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.0/general/nki/api/nki.errors.html
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from .tensors import TensorView
from .values import UserError


@dataclass
class Block:
    """An `if` / `else` branch or a `for` loop being run: the function scope it is in, the
    names it binds there and the tensors created while it runs."""

    scope: object
    kind: str
    line: int
    names: set = field(default_factory=set)
    tensors: set = field(default_factory=set)


@dataclass(frozen=True)
class OutOfScope:
    """What a name holds after the block that bound it to a tensor of its own."""

    name: str
    kind: str
    line: int

    @property
    def where(self) -> str:
        if self.kind == "else":
            return f"the else block of the if at line {self.line}"
        return f"the {self.kind} block at line {self.line}"

    def use_error(self, node) -> UserError:
        return UserError(
            "err_local_variable_used_out_of_scope",
            f"tensor '{self.name}' is defined inside {self.where} and used after it: in Beta 1 "
            "an if / else / for block is the scope of the tensors it defines",
            node,
            f"create the tensor before the block ({self.name} = nl.ndarray(...)) and write it "
            f"inside with {self.name}[...] = ...",
        )


@contextmanager
def block(ip, kind: str, node):
    """Run an `if` branch or a `for` loop as a tensor scope (Beta 1 only; elsewhere nothing)."""
    if not ip.language.rules.block_scoped_tensors or not ip.in_kernel:
        yield
        return
    b = Block(ip.scope, kind, node.lineno)
    ip.tensor_blocks.append(b)
    try:
        yield
    finally:  # also when a break / continue leaves the block
        ip.tensor_blocks.pop()
        outer = ip.tensor_blocks[-1] if ip.tensor_blocks else None
        for name in b.names:
            value = b.scope.vars.get(name)
            if isinstance(value, TensorView) and value.tensor in b.tensors:
                b.scope.vars[name] = OutOfScope(name, kind, b.line)
            elif outer is not None and outer.scope is b.scope:
                outer.names.add(name)


def bound(ip, name: str) -> None:
    """`name` is assigned in the current scope."""
    if ip.tensor_blocks[-1].scope is ip.scope:
        ip.tensor_blocks[-1].names.add(name)


def created(ip, tensor) -> None:
    """`tensor` is allocated: it belongs to every block being run."""
    for b in ip.tensor_blocks:
        b.tensors.add(tensor)
