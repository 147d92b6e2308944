"""The NKI side of the interpreter: where NKI APIs may be called, and the IR that allocations,
kernel parameters and instructions emit."""

from __future__ import annotations

import ast

from ...ir.core import Tensor
from ..tensors import TensorView
from ..values import UserError
from .state import CallSite


class NkiBinding:
    """Part of the `Specialiser`: where NKI APIs may be called, and the IR they emit."""

    def check_nki_context(self, name: str, call: CallSite) -> None:
        if not self.in_kernel:
            raise UserError(
                "err_nki_api_outside_of_nki_kernel",
                f"{name} can only be called while specialising a kernel",
                call.node,
                "call it inside an @nki.jit function (or a helper the kernel calls)",
            )
        if self.lambda_depth:
            raise UserError(
                "err_unsupported_syntax",
                f"lambda bodies must be compile-time expressions; {name} emits IR",
                call.node,
                "use a def function instead of a lambda",
            )

    def alloc(self, shape, dtype: str, buffer: str, label: str, address, call: CallSite):
        self.check_nki_context("nl.ndarray", call)
        tensor = self.builder.alloc(buffer, dtype, shape, label, self.loc(call.node), address)
        for att in self.attempts:
            att.tensors.add(tensor)
        return TensorView.whole(tensor)

    def add_param(self, name: str, spec, node: ast.AST) -> TensorView:
        tensor: Tensor = self.builder.param("hbm", spec.dtype, spec.shape, name, self.loc(node))
        return TensorView.whole(tensor)

    def emit(self, opcode: str, operands: dict, attrs: dict, call: CallSite):
        return self.builder.inst(opcode, operands, attrs, self.loc(call.node))
