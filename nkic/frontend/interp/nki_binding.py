"""The NKI side of the interpreter: where NKI APIs may be called, and the IR that allocations,
kernel parameters and instructions emit."""

from __future__ import annotations

import ast

from ...diagnostics import Diagnostic
from ...ir.core import Tensor
from .. import beta1_scopes
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
        key = (module, name)
        try:
            found = self.deprecations[key]
        except KeyError:  # asked once per name: most names a kernel reads are not deprecated
            found = self.deprecations[key] = self.language.deprecation(module, name)
        if found is not None:
            message, hint = found
            self._emit_diag(
                Diagnostic("nkic_deprecated_api", message, self.loc(node), "warning", hint)
            )

    def warn(self, code: str, message: str, node: ast.AST | None, hint: str) -> None:
        """A warning at `node` (reported once per source location)."""
        self._emit_diag(Diagnostic(code, message, self.loc(node), "warning", hint))

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
        if buffer == "shared_hbm" and self.language.rules.shared_hbm_top_level:
            where = (
                "in a called function"
                if not self.frame.is_kernel
                else ("under an if / else" if self.frame.branches else None)
            )
            if where:
                raise UserError(
                    "err_shared_hbm_must_in_kernel_level",
                    f"a shared HBM tensor is allocated {where}",
                    call.node,
                    "allocate nl.shared_hbm tensors at the top level of the kernel and pass "
                    "them to helpers / write them in the branch",
                )
        if buffer == "shared_hbm" and self.grid:
            return self._grid_shared(shape, dtype, label, address, call)
        tensor = self.builder.alloc(buffer, dtype, shape, label, self.loc(call.node), address)
        for att in self.attempts:
            att.tensors.add(tensor)
        if self.tensor_blocks:
            beta1_scopes.created(self, tensor)
        return TensorView.whole(tensor)

    def _grid_shared(self, shape, dtype: str, label: str, address, call: CallSite):
        """The programs of a Beta 1 grid share their `shared_hbm` tensors: the n-th one a
        program allocates at a line is the one the first program allocated there."""
        loc = self.loc(call.node)
        key = (loc.file, loc.line, loc.col, loc.stack)
        n = self.shared_seen.get(key, 0)
        self.shared_seen[key] = n + 1
        known = self.shared_tensors.setdefault(key, [])
        if n < len(known):
            return TensorView.whole(known[n])
        tensor = self.builder.alloc("shared_hbm", dtype, shape, label, loc, address)
        known.append(tensor)
        return TensorView.whole(tensor)

    def add_param(self, name: str, spec, node: ast.AST) -> TensorView:
        if name in self.grid_params:  # the grid's programs share the kernel's parameters
            return self.grid_params[name]
        tensor: Tensor = self.builder.param("hbm", spec.dtype, spec.shape, name, self.loc(node))
        self.grid_params[name] = TensorView.whole(tensor)
        return self.grid_params[name]

    def emit(self, opcode: str, operands: dict, attrs: dict, call: CallSite):
        return self.builder.inst(opcode, operands, attrs, self.loc(call.node))
