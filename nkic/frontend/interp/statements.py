"""Statements: assignment, `if`, `assert`, `raise`, `return` (kernel outputs), `with`, `del`."""

from __future__ import annotations

import ast

from .. import beta1_scopes, pylib
from ..beta1_mask import is_index_value
from ..tensors import TensorView, type_name
from ..values import (
    MISSING,
    BreakSignal,
    Builtin,
    ContextManagerValue,
    ContinueSignal,
    Function,
    Instance,
    Poison,
    PoisonError,
    PyType,
    Redirect,
    ReturnSignal,
    SourceModule,
    SymbolicAbort,
    UserError,
)
from .state import CallSite


def _source(module: SourceModule) -> str:
    return "\n".join(module.lines)


class Statements:
    """Part of the `Specialiser`: statements."""

    #: The expression whose value the one target of the assignment being made receives (None
    #: with several targets): a dialect may let that expression write the target directly.
    assigned_expr: ast.expr | None = None

    def visit_Expr(self, node: ast.Expr):
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass):
        pass

    def visit_Break(self, node: ast.Break):
        raise BreakSignal()

    def visit_Continue(self, node: ast.Continue):
        raise ContinueSignal()

    def visit_Assign(self, node: ast.Assign):
        value = self.visit(node.value)
        outer = self.assigned_expr
        self.assigned_expr = node.value if len(node.targets) == 1 else None
        try:
            for target in node.targets:
                self.assign(target, value)
        finally:
            self.assigned_expr = outer

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is not None:
            self.assign(node.target, self.visit(node.value))

    def visit_NamedExpr(self, node: ast.NamedExpr):
        value = self.visit(node.value)
        self.assign(node.target, value)
        return value

    def visit_AugAssign(self, node: ast.AugAssign):
        target = node.target
        if isinstance(target, ast.Name):
            current = self.load_name(target.id, target)
            self.store_name(
                target.id, self.binop(node.op, current, self.visit(node.value), True, node)
            )
        elif isinstance(target, ast.Attribute):
            obj = self.visit(target.value)
            current = self.getattr(obj, target.attr, target)
            new = self.binop(node.op, current, self.visit(node.value), True, node)
            self.setattr(obj, target.attr, new)
        elif isinstance(target, ast.Subscript):
            obj = self.visit(target.value)
            key = self.visit(target.slice)
            if isinstance(obj, TensorView) and not self.language.rules.tile_augmented_assignment:
                raise UserError(
                    "err_tensor_operator",
                    "augmented assignment to a tensor is not supported",
                    node,
                    "compute into the tile with a nki.isa instruction (e.g. tensor_tensor)",
                )
            current = self.getitem(obj, key)
            new = self.binop(node.op, current, self.visit(node.value), True, node)
            if new is not current:  # `psum[...] += nc_matmul(...)` accumulated in place
                self.setitem(obj, key, new)
        else:
            raise self.unsupported(target)

    def assign(self, target: ast.AST, value) -> None:
        if type(target) is ast.Name:
            if not self.plain_bind_name:
                value = self.language.bind_name(self, target.id, value)
            if type(value) is TensorView and not value.tensor.label:
                value.tensor.label = target.id
            if self.tensor_blocks:
                beta1_scopes.shadowing(self, target, value)
            self.store_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value, target)
            stars = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            n = len(target.elts)
            if stars:
                s = stars[0]
                if len(items) < n - 1:
                    raise UserError(
                        "err_value_error",
                        f"not enough values to unpack (expected at least {n - 1}, got {len(items)})",
                    )
                rest = len(items) - (n - 1)
                groups = items[:s] + [list(items[s : s + rest])] + items[s + rest :]
                for t, v in zip(target.elts, groups):
                    self.assign(t.value if isinstance(t, ast.Starred) else t, v)
                return
            if len(items) != n:
                raise UserError(
                    "err_value_error",
                    f"cannot unpack {len(items)} values into {n} names",
                    target,
                )
            for t, v in zip(target.elts, items):
                self.assign(t, v)
        elif isinstance(target, ast.Attribute):
            self.setattr(self.visit(target.value), target.attr, value)
        elif isinstance(target, ast.Subscript):
            obj = self.visit(target.value)
            self.setitem(obj, self.visit(target.slice), value, target)
        else:
            raise self.unsupported(target)

    def visit_Global(self, node: ast.Global):
        if ast.Global in self.language.rules.unsupported_syntax and self.in_kernel:
            raise self.unsupported(node)
        for name in node.names:
            self._redirect(node, name, self.frame.module.scope, "global")

    def visit_Nonlocal(self, node: ast.Nonlocal):
        if ast.Nonlocal in self.language.rules.unsupported_syntax and self.in_kernel:
            raise self.unsupported(node)
        for name in node.names:
            s = self.scope.parent
            while s is not None and s.kind != "module":
                if s.kind == "function" and name in s.vars:
                    break
                s = s.parent
            if s is None or s.kind == "module":
                raise UserError("err_syntax_error", f"no binding for nonlocal '{name}' found", node)
            self._redirect(node, name, s, "nonlocal")

    def _redirect(self, node, name: str, target, what: str) -> None:
        """Make `name` in the current scope read and write `target`'s binding (one that is
        itself redirected, by an enclosing `nonlocal`, is followed to where it lives)."""
        scope = self.scope
        if scope.kind == "module":
            return  # `global x` at module level changes nothing
        if name in scope.vars and type(scope.vars[name]) is not Redirect:
            raise UserError(
                "err_syntax_error", f"name '{name}' is assigned to before {what} declaration", node
            )
        held = target.vars.get(name)
        scope.vars[name] = held if type(held) is Redirect else Redirect(target)

    def visit_Delete(self, node: ast.Delete):
        for t in node.targets:
            if isinstance(t, ast.Name):
                if self.scope.find(t.id) is not self.scope:
                    raise UserError("err_undefined_name", f"name '{t.id}' is not defined", t)
                self.store_name(t.id, MISSING)
                del self.scope.vars[t.id]
            elif isinstance(t, ast.Subscript):
                obj, key = self.visit(t.value), self.visit(t.slice)
                if not isinstance(obj, (list, dict)):
                    raise UserError("err_type_error", f"cannot delete items of {type_name(obj)}", t)
                self.touch(obj)
                try:
                    del obj[self.deep_concrete(key)]
                except (KeyError, IndexError, TypeError) as e:
                    raise UserError("err_value_error", f"cannot delete item: {e}", t) from None
            else:
                raise self.unsupported(t)

    def visit_If(self, node: ast.If):
        value = self.visit(node.test)  # `condition`, its most frequent case without its call
        if type(value) is not bool:
            value = self.condition_value(value, node.test)
        block = node.body if value else node.orelse
        frame = self.frames[-1]
        frame.branches += 1
        try:
            if self.language.rules.block_scoped_tensors and self.in_kernel:
                with beta1_scopes.block(self, "if" if block is node.body else "else", node):
                    self.exec_block(block)
            else:  # no tensor scope: the same, without a context manager per branch
                for stmt in block:
                    self.exec_stmt(stmt)
        finally:
            frame.branches -= 1

    def condition(self, test: ast.AST) -> bool:
        value = self.visit(test)
        if type(value) is bool:  # the most frequent: a comparison's result
            return value
        return self.condition_value(value, test)

    def condition_value(self, value, test: ast.AST) -> bool:
        """The truth of `value`, the value of the condition `test`."""
        if is_index_value(value):
            raise UserError(
                "err_control_flow_condition_depending_on_arange",
                "this condition depends on nl.arange / nl.mgrid index grids, which stand for "
                "every index at once and have no single truth value",
                test,
                "pass the comparison as mask= of the nl / nisa call it restricts, or test "
                "a loop variable or a compile-time value",
            )
        if isinstance(value, TensorView):
            return self.tensor_truth(
                test,
                UserError(
                    "err_dynamic_control_flow_not_supported",
                    "control flow cannot depend on a tensor's contents",
                    test,
                    "conditions must be compile-time values (shapes, ints, bools); select at "
                    "runtime with nisa.affine_select / tensor_copy_predicated",
                ),
            )
        return self.truth(value)

    def visit_Return(self, node: ast.Return):
        for att in self.attempts:
            if att.scope is self.scope:
                raise SymbolicAbort(att, "return inside the loop body")
        value = None if node.value is None else self.visit(node.value)
        if self.frame.is_kernel:
            self.mark_outputs(value, node)
        raise ReturnSignal(value)

    def mark_outputs(self, value, node: ast.Return) -> None:
        if value is None:
            return
        sequences = (tuple, list) if self.language.rules.list_returns else (tuple,)
        items = value if isinstance(value, sequences) else (value,)
        for item in items:
            if isinstance(item, Poison):
                raise PoisonError()  # its computation failed, and was reported
            if isinstance(item, list) and item is value:
                raise UserError(
                    "err_type_error",
                    f"{self.language.name} kernels return a tensor or a tuple of tensors, "
                    "not a list",
                    node.value,
                    "return tuple(...) of the list (NKI 0.7 kernels may return a list)",
                )
            if not isinstance(item, TensorView):
                raise UserError(
                    "err_type_error",
                    f"a kernel returns tensors, not {type_name(item)}",
                    node.value,
                    "return a tensor allocated with nl.ndarray(..., buffer=nl.shared_hbm)",
                )
            allowed = self.language.rules.output_buffers
            if item.buffer not in allowed and item.tensor.kind != "input":
                raise UserError(
                    "err_output_not_shared_hbm",
                    f"returned tensor '{item.tensor.label or item.tensor.name}' is in "
                    f"{item.buffer}; kernel outputs must be in shared_hbm",
                    node.value,
                    "allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm)",
                )
        if isinstance(node.value, ast.Name) and isinstance(value, TensorView):
            value.tensor.label = value.tensor.label or node.value.id
        returned = list(zip(self.kernel.returns, self.kernel.return_views))
        for item in items:
            view = _returned_view(item, node)
            if (item.tensor, view) not in returned:
                self.builder.mark_output(item.tensor, view)
                returned.append((item.tensor, view))

    def visit_Assert(self, node: ast.Assert):
        value = self.visit(node.test)
        if isinstance(value, TensorView):
            value = self.tensor_truth(
                node.test,
                UserError(
                    "err_ambiguous_tensor_truth_value",
                    "the truth value of a tensor is ambiguous at specialisation time",
                    node.test,
                ),
            )
        if not self.truth(value):
            text = ast.get_source_segment(_source(self.module), node.test) or "condition"
            msg = self.to_str(self.visit(node.msg)) if node.msg is not None else None
            err = UserError(
                "err_assert_failed",
                f"assertion failed: {msg}" if msg else f"assertion failed: {text}",
                node,
                None if msg is None else f"the failing condition is `{text}`",
            )
            err.raised = pylib.ExceptionValue("AssertionError", msg or "")
            raise err

    def visit_Raise(self, node: ast.Raise):
        exc = None if node.exc is None else self.visit(node.exc)
        if isinstance(exc, pylib.ExceptionValue):
            message = f"{exc.kind}: {exc.message}" if exc.message else exc.kind
        elif isinstance(exc, PyType):
            message = exc.name
        else:
            message = "exception raised"
        err = UserError("err_raised_exception", message, node)
        if isinstance(exc, pylib.ExceptionValue):
            err.raised = exc
        elif isinstance(exc, Builtin) and exc.name in pylib.EXCEPTION_KINDS:  # `raise ValueError`
            err.raised = pylib.ExceptionValue(exc.name, "")
        raise err

    def visit_Try(self, node: ast.Try):
        """`try`/`except`/`else`/`finally` at specialisation time (NKI 0.7 traces the kernel as
        Python): a `raise` or a failed `assert` in the body (or in a function it calls) runs
        the first handler naming its class or a base of it; other diagnostics are not
        exceptions of the kernel and are reported as they are."""
        if getattr(self, "host_code", False) and not self.in_kernel:
            return super().visit_Try(node)  # module-level code (Modules.visit_Try)
        if ast.Try in self.language.rules.unsupported_syntax:
            raise self.unsupported(node)
        self.try_depth = getattr(self, "try_depth", 0) + 1
        caught = None
        try:
            self.exec_block(node.body)
        except UserError as err:
            raised = getattr(err, "raised", None)
            handler = None if raised is None else self._handler(node.handlers, raised)
            if handler is None:
                if raised is not None:
                    self.try_depth -= 1
                    self.exec_block(node.finalbody)
                    self.try_depth += 1
                raise
            caught = (handler, raised)
        finally:
            self.try_depth -= 1
        if caught is None:
            self.exec_block(node.orelse)
            self.exec_block(node.finalbody)
            return
        handler, raised = caught
        try:
            if handler.name:
                self.store_name(handler.name, raised)
            self.exec_block(handler.body)
        finally:
            self.exec_block(node.finalbody)

    def _handler(self, handlers: list[ast.ExceptHandler], raised) -> ast.ExceptHandler | None:
        import builtins

        cls = getattr(builtins, raised.kind, Exception)
        for h in handlers:
            if h.type is None:
                return h
            kinds = self.visit(h.type)
            kinds = kinds if isinstance(kinds, tuple) else (kinds,)
            for k in kinds:
                if not (isinstance(k, Builtin) and k.name in pylib.EXCEPTION_KINDS):
                    raise UserError(
                        "err_invalid_argument",
                        "an except clause names a built-in exception class (Exception, "
                        "ValueError, AssertionError, ...)",
                        h.type,
                    )
                if issubclass(cls, getattr(builtins, k.name)):
                    return h
        return None

    def visit_With(self, node: ast.With):
        if self.language.rules.python_with and not self._is_no_reorder(node):
            return self._with_objects(node.items, node.body)
        for item in node.items:
            ctx = self.visit(item.context_expr)
            if not isinstance(ctx, ContextManagerValue) or item.optional_vars is not None:
                raise UserError(
                    "err_unsupported_syntax",
                    "only `with nl.no_reorder():` is supported",
                    item.context_expr,
                    "remove the with statement",
                )
        self.no_reorder_depth = getattr(self, "no_reorder_depth", 0) + 1  # (dynamic loops)
        try:
            self.exec_block(node.body)
        finally:
            self.no_reorder_depth -= 1

    def _is_no_reorder(self, node: ast.With) -> bool:
        return any(_no_reorder_call(item.context_expr) for item in node.items)

    def _with_objects(self, items: list[ast.withitem], body: list[ast.stmt]) -> None:
        """`with obj as v:` over a Python object (NKI 0.7 runs the kernel as Python): its
        `__enter__` result is bound to `v`, the body runs, then `__exit__(None, None, None)`;
        an exception of the kernel leaving the body passes `__exit__` its class and message
        and is suppressed when `__exit__` returns a true value."""
        if not items:
            self.exec_block(body)
            return
        item = items[0]
        ctx = self.visit(item.context_expr)
        enter = ctx.cls.lookup("__enter__") if isinstance(ctx, Instance) else None
        leave = ctx.cls.lookup("__exit__") if isinstance(ctx, Instance) else None
        if not isinstance(enter, Function) or not isinstance(leave, Function):
            raise UserError(
                "err_unsupported_syntax",
                f"`{ast.unparse(item.context_expr)}` is not a context manager (no __enter__ "
                "and __exit__ methods)",
                item.context_expr,
                "define __enter__ and __exit__ on the class, or use `with nl.no_reorder():`",
            )
        value = self.call_function(enter, [ctx], {}, CallSite(None))
        if item.optional_vars is not None:
            self.assign(item.optional_vars, value)
        depth = getattr(self, "try_depth", 0)
        self.try_depth = depth + 1
        try:
            self._with_objects(items[1:], body)
        except UserError as err:
            self.try_depth = depth
            raised = getattr(err, "raised", None)
            if raised is None:
                raise
            args = [ctx, pylib.exception_class(raised.kind), raised, None]
            if self.truth(self.call_function(leave, args, {}, CallSite(None))):
                return
            raise
        finally:
            self.try_depth = depth
        self.call_function(leave, [ctx, None, None, None], {}, CallSite(None))


def _no_reorder_call(expr: ast.AST) -> bool:
    """`nl.no_reorder()` (or `no_reorder()`), recognised by name before evaluation."""
    if not isinstance(expr, ast.Call):
        return False
    f = expr.func
    return (isinstance(f, ast.Attribute) and f.attr == "no_reorder") or (
        isinstance(f, ast.Name) and f.id == "no_reorder"
    )


def _returned_view(item: TensorView, node: ast.Return) -> tuple | None:
    """(shape, element offset, element strides) of a returned view, None for a whole tensor:
    the caller receives the view (a reshape, a slice, a permutation) the kernel returns."""
    whole = item.tensor.full_pattern()
    if item.pattern == whole and item.offset.const == 0 and item.dtype == item.tensor.dtype:
        return None
    if item.dtype != item.tensor.dtype:
        raise UserError(
            "err_unsupported_api",
            f"the returned view reinterprets `{item.tensor.label or item.tensor.name}` "
            f"({item.tensor.dtype}) as {item.dtype}, which nkic does not return",
            node.value,
            "return the tensor itself and reinterpret it on the host",
        )
    shape = tuple(n for _, n in item.pattern)
    strides = tuple(step for step, _ in item.pattern)
    return shape, item.offset.const, strides
