"""The NKI side of the interpreter: where NKI APIs may be called, and the IR that allocations,
kernel parameters and instructions emit."""

from __future__ import annotations

import ast

from ...diagnostics import Diagnostic
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

    def warn_deprecated(self, module: str, name: str, node: ast.AST | None) -> None:
        """A warning where a kernel uses a name its language version deprecates."""
        found = self.language.deprecation(module, name)
        if found is not None:
            message, hint = found
            self._emit_diag(
                Diagnostic("nkic_deprecated_api", message, self.loc(node), "warning", hint)
            )

    def nested_kernel_call(self, fn, node: ast.AST) -> None:
        """A kernel calls an `@nki.jit` kernel: an error, or (where the language inlines it) a
        warning, after which the call proceeds like a helper call."""
        severity = self.language.rules.nested_kernel_call
        err = UserError(
            "err_nested_kernel_call",
            f"'{fn.name}' is an @nki.jit kernel and cannot be called from a kernel"
            if severity == "error"
            else f"'{fn.name}' is an @nki.jit kernel called from a kernel; nkic inlines it",
            node,
            "remove @nki.jit from sub-kernels; decorate at the call site if it is also "
            "used standalone",
        )
        if severity == "error":
            raise err
        self._emit_diag(Diagnostic(err.code, err.message, self.loc(node), "warning", err.hint))

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
