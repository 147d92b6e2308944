"""Where the interpreter is (frames, scopes, source locations), how it reports diagnostics, how
it dispatches and recovers per statement, and name lookup."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

from ...diagnostics import Diagnostic
from ...ir.core import Loc
from .. import beta1_scopes
from ..tensors import NonConstExtent
from ..values import (
    POISON,
    BreakSignal,
    ContinueSignal,
    Deferred,
    Escaped,
    Function,
    KernelAbort,
    Poison,
    PoisonError,
    Redirect,
    RestartUnrolled,
    ReturnSignal,
    Scope,
    SourceModule,
    SymbolicAbort,
    UserError,
)
from .state import ABORT_CODES, Frame, is_error, is_none_literal

#: Values a name may hold that are not its value: reading one is handled by `load_name`.
MARKED_VALUES = frozenset({Poison, Deferred, Escaped, Redirect, beta1_scopes.OutOfScope})
#: Constant types outside the subset (`visit_Constant` reports them).
UNSUPPORTED_CONSTANTS = frozenset({bytes, complex})

#: Hints for diagnostics raised without a more specific one.
_DEFAULT_HINTS = {
    "err_type_error": "specialisation follows Python semantics: check the types of the values",
    "err_value_error": "check the values involved (indices, keys, divisors, unpacking)",
    "err_attribute_error": "check the attribute name and the object it is looked up on",
    "err_invalid_argument": "check the argument against the API's signature (docs/language.md)",
    "err_invalid_view": "on-chip views keep the partition dimension first and cannot stride it",
    "err_invalid_index": "index tensors with ints, slices, nl.ds(start, size) and '...'",
    "err_tensor_access_out_of_bound": "indices and slices must lie within the tensor's shape",
    "err_unsupported_api": "see docs/language.md for the subset nkic supports",
    "err_undefined_name": "define or import the name before using it",
    "err_missing_argument": "pass every required argument",
    "err_unexpected_keyword": "check the keyword against the signature",
    "err_unsupported_syntax": "rewrite it with the NKI subset (docs/language.md)",
    "err_unknown_api": "see the nki.language / nki.isa API list",
    "err_assert_failed": "the assertion in the kernel does not hold for these arguments",
    "err_raised_exception": "the kernel raised this for the given arguments",
    "err_local_variable_used_out_of_scope": "allocate the tensor before the loop",
    "err_ambiguous_tensor_truth_value": "conditions must be compile-time values, not tensors",
    "err_annotation_shape_mismatch": "pass a tensor of the annotated shape or fix the annotation",
    "err_dynamic_control_flow_not_supported": "conditions must be compile-time values",
    "err_import_error": "helper modules are searched next to the kernel file, in its package "
    "and on sys.path",
    "err_tensor_operator": "compute with nki.isa instructions",
    "err_unsupported_memory": "check which buffers the operation accepts",
    "err_specialisation_limit": "bound the recursion / loop at specialisation time",
}


def _target_names(t: ast.AST) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        out = []
        for e in t.elts:
            out += _target_names(e)
        return out
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return []


_NODE_NAMES = {
    "Try": "try/except",
    "TryStar": "try/except*",
    "Global": "the 'global' statement",
    "Nonlocal": "the 'nonlocal' statement",
    "Yield": "'yield' (generators)",
    "YieldFrom": "'yield from' (generators)",
    "AsyncFunctionDef": "async functions",
    "AsyncFor": "'async for'",
    "AsyncWith": "'async with'",
    "Await": "'await'",
    "Set": "set literals",
    "SetComp": "set comprehensions",
    "Match": "the 'match' statement",
    "MatMult": "the '@' operator",
    "Starred": "starred expressions here",
    "keyword": "class keywords",
}


def _describe(node: ast.AST) -> str:
    name = type(node).__name__
    return _NODE_NAMES.get(name, f"the Python construct '{name}'")


class Context:
    """Part of the `Specialiser`: frames, locations, diagnostics, dispatch, names."""

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def scope(self) -> Scope:
        return self.frames[-1].scope

    @property
    def module(self) -> SourceModule:
        return self.frames[-1].module

    def loc(self, node: ast.AST | None, with_stack: bool = True) -> Loc:
        file = self.frames[-1].module.file if self.frames else "<unknown>"
        if node is None or not hasattr(node, "lineno"):
            return Loc(file, 1, 1, 1, 1, tuple(self.call_stack) if with_stack else ())
        # A node's span is computed once: every unrolled iteration emits its ops again.
        hit = self._spans.get(id(node))
        if hit is not None and hit[0] is node and hit[1] == file:
            span = hit[2]
        else:
            line = node.lineno
            end_line = getattr(node, "end_lineno", None) or line
            end_offset = getattr(node, "end_col_offset", None)
            col = self._column(line, node.col_offset)
            end_col = self._column(end_line, node.col_offset if end_offset is None else end_offset)
            span = Loc(file, line, col, end_line, end_col)
            self._spans[id(node)] = (node, file, span)  # holds the node: its id stays unique
        return span.with_stack(tuple(self.call_stack)) if with_stack and self.call_stack else span

    def _column(self, line: int, byte_offset: int) -> int:
        """1-based character column of a UTF-8 byte offset (what `ast` records)."""
        lines = self.module.lines
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode()[:byte_offset].decode(errors="ignore")) + 1

    def report(self, err: UserError) -> None:
        loc = getattr(err, "loc", None) or self.loc(err.node)
        if self.host_code and not err.certain:
            err.loc = loc
            self.host_errors.append(err)  # the module statement's names become Deferred
            return
        hint = err.hint or _DEFAULT_HINTS.get(err.code)
        message = err.message
        if self.builder.iteration and err.code != "err_specialisation_limit":  # (names its loop)
            message += self.iteration_note(loc.file)
        self._emit_diag(Diagnostic(err.code, message, loc, "error", hint, err.related))

    def iteration_note(self, file: str) -> str:
        """` (iteration j=0, i=4 of the loops at lines 8, 9)`: the iteration of the unrolled
        loops being run, their variables named as in profiles and faults (`[i=4]`) and in the
        symbolic loops' bounds errors (`when i=4`). One report per root cause: the first
        iteration that fails."""
        # a loop entered but not yet in its first iteration is last in `loop_sites`: zip
        # stops before it
        running = list(zip(self.loop_sites, self.builder.iteration))
        values = ", ".join(f"{name}={value}" for _, (name, value) in running)
        if all(f == file for (f, _), _ in running):
            where = [str(node.lineno) for (_, node), _ in running]
        else:  # an error in a helper of another file
            where = [f"{Path(f).name}:{node.lineno}" for (f, node), _ in running]
        loops = "loop at line" if len(where) == 1 else "loops at lines"
        return f" (iteration {values} of the {loops} {', '.join(where)})"

    def _emit_diag(self, d: Diagnostic) -> None:
        if self.attempts:
            self.attempts[-1].diags.append(d)
            return
        key = (d.code, d.loc.file, d.loc.line, d.loc.col, d.loc.stack)
        if d.code == "nkic_deprecated_api":  # at its first use: a name a kernel loops with
            key = (d.code, d.message)  # would otherwise warn on every loop
        if key not in self.reported_keys:  # one report per root cause, not per unrolled iteration
            self.reported_keys.add(key)
            self.sink.report(d)

    def precheck(self, fn: Function) -> None:
        """Report constructs outside the subset anywhere in a kernel, including code that
        specialisation does not reach (a linter sees every problem in one run)."""
        for node in ast.walk(fn.node):
            if type(node) in self.language.rules.unsupported_syntax:
                self.report(self.error_node(self.unsupported(node), node))
            elif isinstance(node, ast.Compare) and self.language.rules.is_only_against_none:
                for op, left, right in zip(
                    node.ops, [node.left, *node.comparators], node.comparators
                ):
                    if isinstance(op, (ast.Is, ast.IsNot)) and not (
                        is_none_literal(left) or is_none_literal(right)
                    ):
                        self.report(self.error_node(is_error(node), node))

    def print_out(self, text: str) -> None:
        if self.attempts:  # Python prints once per iteration: unroll to do the same
            raise SymbolicAbort(self.attempts[-1], "print() in the loop body")
        self.output.append(text)

    def error_node(self, err: UserError, node: ast.AST) -> UserError:
        if getattr(err, "loc", None) is None:
            err.loc = self.loc(err.node or node)
        return err

    def visit(self, node: ast.AST):
        kind = type(node)
        # The most frequent nodes inline, with no call: a plain name outside symbolic loops
        # (`visit_Name`'s fast path) and a constant. Neither can raise.
        if kind is ast.Name:
            if not self.attempts:
                name = node.id
                s = self.frames[-1].scope
                while s is not None:
                    found = s.vars
                    if name in found:
                        value = found[name]
                        if type(value) not in MARKED_VALUES:
                            return value
                        break
                    s = s.parent
                else:  # in no scope: a builtin (`load_name`'s first case)
                    found = self.builtins
                    if name in found:
                        return found[name]
        elif kind is ast.Constant:
            value = node.value
            if type(value) not in UNSUPPORTED_CONSTANTS:
                return value
        method = self._visitors.get(kind) or self._visitor(node)
        try:
            return method(node)
        except UserError as err:
            raise self.error_node(err, node) from None
        except NonConstExtent as e:
            self.need_concrete(e.extent)
            raise

    def _visitor(self, node: ast.AST):
        """The `visit_*` method for the node's type (cached), or the unsupported-syntax error."""
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.error_node(self.unsupported(node), node)
        self._visitors[type(node)] = method
        return method

    def unsupported(self, node: ast.AST) -> UserError:
        what = _describe(node)
        return UserError(
            "err_unsupported_syntax",
            f"{what} is not supported in NKI kernels",
            node,
            self.language.rules.unsupported_syntax.get(
                type(node), "rewrite it with the NKI subset (docs/language.md)"
            ),
        )

    def exec_block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.exec_stmt(stmt)

    def exec_stmt(self, stmt: ast.stmt) -> None:
        try:
            # `visit(stmt)` inline: one call less per statement (two for an expression's:
            # `visit_Expr` inline too)
            kind = type(stmt)
            method = None if kind is ast.Expr else self._visitors.get(kind) or self._visitor(stmt)
            try:
                if method is None:
                    self.visit(stmt.value)
                else:
                    method(stmt)
            except UserError as err:
                raise self.error_node(err, stmt) from None
            except NonConstExtent as e:
                self.need_concrete(e.extent)
                raise
        except (
            ReturnSignal,
            BreakSignal,
            ContinueSignal,
            SymbolicAbort,
            RestartUnrolled,
            KernelAbort,
        ):
            raise
        except UserError as err:
            if getattr(self, "try_depth", 0) and getattr(err, "raised", None) is not None:
                raise  # an exception of the kernel: an enclosing `try` may handle it
            if (err.code in ABORT_CODES or err.ends_kernel) and self.in_kernel:
                if self.attempts:
                    # find the failing iteration concretely: unroll the loop being tried
                    raise SymbolicAbort(self.attempts[-1], "the body fails an assertion") from None
                self.report(err)
                raise KernelAbort() from None
            self.report(err)
            self.poison_targets(stmt)
            self.poison_return(stmt)
        except PoisonError:
            self.poison_targets(stmt)
            self.poison_return(stmt)
        except RecursionError:
            self.report(
                UserError(
                    "err_specialisation_limit",
                    "the kernel nests too deeply to specialise",
                    stmt,
                    "reduce the recursion depth of helper functions",
                )
            )
            self.poison_targets(stmt)
        except Exception as exc:  # a bug in nkic: report it at the statement and keep going
            self.report(
                UserError(
                    "nkic_internal_error",
                    f"internal error in the nkic frontend: {type(exc).__name__}: {exc}",
                    stmt,
                    "this is a bug in nkic; please report it with the kernel",
                )
            )
            self.poison_targets(stmt)

    @staticmethod
    def poison_return(stmt: ast.stmt) -> None:
        """A `return` whose value failed returns a poisoned value, so that callers do not
        report follow-on errors about the `None` it would otherwise return."""
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            raise ReturnSignal(POISON) from None

    def poison_targets(self, stmt: ast.stmt) -> None:
        targets: list[ast.AST] = []
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            # a skipped block may have bound any name assigned inside it
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    self.scope.vars[sub.id] = POISON
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    self.scope.vars[sub.name] = POISON
            return
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            targets = [stmt.target] if getattr(stmt, "value", True) is not None else []
        elif isinstance(stmt, ast.For):
            targets = [stmt.target]
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self.scope.vars[stmt.name] = POISON
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name != "*":
                    self.scope.vars[(alias.asname or alias.name).split(".")[0]] = POISON
        for t in targets:
            for name in _target_names(t):
                self.scope.vars[name] = POISON

    def load_name(self, name: str, node: ast.AST):
        scope = self.scope.find(name)
        if scope is None:
            if name in self.builtins:
                return self.builtins[name]
            raise UserError(
                "err_undefined_name",
                f"name '{name}' is not defined",
                node,
                self.suggest(name, self._visible_names()),
            )
        for att in self.attempts:
            if att.scope is scope and name not in att.written:
                att.read_outer.add(name)
        value = scope.vars[name]
        if type(value) is Redirect:  # declared global / nonlocal
            target = value.scope
            if name not in target.vars:
                raise UserError("err_undefined_name", f"name '{name}' is not defined", node)
            value = target.vars[name]
        if isinstance(value, Poison):
            raise PoisonError()
        if isinstance(value, Deferred):
            raise value.use_error(node)
        if isinstance(value, beta1_scopes.OutOfScope):
            raise value.use_error(node)
        if isinstance(value, Escaped):
            if value.affine_tile:
                raise UserError(
                    "err_local_variable_used_out_of_scope",
                    f"tile '{value.name}' is allocated inside the nl.affine_range loop at line "
                    f"{value.loop[1]} and used after it: the loop's iterations are parallel, so "
                    "there is no last one whose tile remains",
                    None,
                    "allocate the tile before the loop and write each iteration into a slice "
                    "of it, or use nl.sequential_range if the last iteration's tile is meant",
                )
            raise RestartUnrolled(value.loop)
        return value

    def store_name(self, name: str, value) -> None:
        scope = self.frames[-1].scope
        if type(scope.vars.get(name)) is Redirect:  # declared global / nonlocal
            if self.attempts:  # state that outlives the loop body: unroll the loop
                raise SymbolicAbort(self.attempts[-1], f"'{name}' is global or nonlocal")
            scope.vars[name].scope.vars[name] = value
            return
        for att in self.attempts:
            if att.scope is scope:
                if name in att.read_outer:
                    raise SymbolicAbort(att, f"'{name}' is carried between iterations")
                att.written.add(name)
        if self.tensor_blocks:
            beta1_scopes.bound(self, name)
        scope.vars[name] = value

    def _visible_names(self) -> list[str]:
        names: set[str] = set(self.builtins)
        s: Scope | None = self.scope
        while s is not None:
            names |= set(s.vars)
            s = s.parent
        return sorted(names)

    @staticmethod
    def suggest(word: str, choices) -> str | None:
        close = difflib.get_close_matches(word, list(choices), n=1)
        return f"did you mean '{close[0]}'?" if close else None
