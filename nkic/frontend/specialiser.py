"""The specialiser: an AST interpreter for the NKI meta-programming language that evaluates
compile-time values and emits tile IR for `nki.isa` calls, allocations and symbolic loops.

One `visit_X` per accepted construct; anything else is `err_unsupported_syntax`. Errors are
`UserError`s caught per statement (reported, then the statement is skipped and the names it
would have bound are poisoned so that their later uses stay silent)."""

from __future__ import annotations

import ast
import difflib
import operator
import types
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic
from ..ir.affine import Affine, NonAffineError
from ..ir.builder import Builder
from ..ir.core import Kernel, Loc, Tensor, UnrolledLoop
from . import languages, nki_api, pylib
from .language import Language
from .loader import Loader
from .tensors import NonConstExtent, TensorView, type_name
from .values import (
    MISSING,
    POISON,
    BoundMethod,
    BreakSignal,
    Builtin,
    ClassMethod,
    ContextManagerValue,
    ContinueSignal,
    DynSlice,
    EnumAuto,
    EnumBase,
    EnumMember,
    Escaped,
    FieldDefault,
    FieldSpec,
    Function,
    Instance,
    IsaEnumMember,
    IsaInstr,
    KernelAbort,
    ModuleValue,
    NkiClass,
    NkiObjectBase,
    NlOp,
    OpaqueModule,
    Poison,
    PoisonError,
    Property,
    PyType,
    RangeValue,
    RestartUnrolled,
    ReturnSignal,
    Scope,
    SourceModule,
    StaticMethod,
    SuperProxy,
    SymbolicAbort,
    UserError,
    is_symbolic,
    norm_int,
)

MAX_CALL_DEPTH = 200
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_HOST_ONLY = ("nkic", "nkirt")  # the compiler itself, imported by host code in kernel files
MAX_ITERATIONS = 200_000

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

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_BINOP_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.MatMult: "@",
}  # fmt: skip
#: The `nl` function computing each operator on tiles.
_NL_BINOPS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power",
    "<<": "left_shift", ">>": "right_shift", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor", "@": "matmul",
}  # fmt: skip
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}

_PLAIN = (int, float, bool, str, type(None))


#: Errors that end the kernel like the Python exception they stand for (values.KernelAbort).
ABORT_CODES = frozenset({"err_assert_failed", "err_raised_exception"})


@dataclass
class CallSite:
    """Where a call happens: its node, and the nodes of its arguments for precise spans."""

    node: ast.AST
    arg_nodes: list = field(default_factory=list)
    kw_nodes: dict = field(default_factory=dict)

    def arg_node(self, index: int | None = None, name: str | None = None) -> ast.AST:
        if name is not None and name in self.kw_nodes:
            return self.kw_nodes[name]
        if index is not None and index < len(self.arg_nodes):
            return self.arg_nodes[index]
        return self.node


@dataclass
class Frame:
    """An active function call (or the module body being evaluated)."""

    scope: Scope
    module: SourceModule
    func: Function | None = None
    is_kernel: bool = False


@dataclass
class Attempt:
    """A symbolic execution of a loop body, discarded (and the loop unrolled) on any use of the
    induction variable that needs a concrete value, or on loop-carried compile-time state."""

    scope: Scope
    snapshot: dict
    roots: list
    var: str = ""
    read_outer: set = field(default_factory=set)
    written: set = field(default_factory=set)
    tensors: set = field(default_factory=set)
    diags: list = field(default_factory=list)
    reachable: set | None = None
    iterations: range | None = None


class Specialiser:
    """Evaluates a kernel file for one set of arguments and builds its Kernel."""

    def __init__(
        self,
        loader: Loader,
        sink,
        target: str,
        kernel_name: str,
        unroll_all: bool = False,
        unroll_loops: frozenset = frozenset(),
        language: Language | None = None,
    ):
        self.language = language or languages.DEFAULT
        self.loader = loader
        self.sink = sink
        self.target = target
        self.kernel = Kernel(kernel_name, target)
        self.builder = Builder(self.kernel)
        self.unroll_all = unroll_all
        self.unroll_loops = unroll_loops  # (file, line, col) of loops that must be unrolled
        self.loop_keys: dict[str, tuple] = {}  # IR loop variable -> its loop's key
        self.output: list[str] = []  # compile-time print() output, written when done
        self.frames: list[Frame] = []
        self.call_stack: list[Loc] = []
        self.attempts: list[Attempt] = []
        self.in_kernel = False
        self.lambda_depth = 0
        self.iterations = 0
        self.modules: dict[str, object] = {}
        self.module_by_file: dict[str, SourceModule] = {}
        self.builtins = pylib.python_builtins()
        self.known_modules = {**pylib.known_modules(), **self.language.modules()}
        self._visitors: dict[type, object] = {}
        self.reported_keys: set[tuple] = set()
        self.constants: list = []  # Allocs of constant tensors, placed first when done

    # -----------------------------------------------------------------------------------------
    # context

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
        file = self.module.file if self.frames else "<unknown>"
        if node is None or not hasattr(node, "lineno"):
            return Loc(file, 1, 1, 1, 1, tuple(self.call_stack) if with_stack else ())
        line = node.lineno
        end_line = getattr(node, "end_lineno", None) or line
        end_offset = getattr(node, "end_col_offset", None)
        col = self._column(line, node.col_offset)
        end_col = self._column(end_line, node.col_offset if end_offset is None else end_offset)
        return Loc(file, line, col, end_line, end_col, tuple(self.call_stack) if with_stack else ())

    def _column(self, line: int, byte_offset: int) -> int:
        """1-based character column of a UTF-8 byte offset (what `ast` records)."""
        lines = self.module.lines
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode()[:byte_offset].decode(errors="ignore")) + 1

    # -----------------------------------------------------------------------------------------
    # diagnostics

    def report(self, err: UserError) -> None:
        loc = getattr(err, "loc", None) or self.loc(err.node)
        hint = err.hint or _DEFAULT_HINTS.get(err.code)
        self._emit_diag(Diagnostic(err.code, err.message, loc, "error", hint))

    def _emit_diag(self, d: Diagnostic) -> None:
        if self.attempts:
            self.attempts[-1].diags.append(d)
            return
        key = (d.code, d.loc.file, d.loc.line, d.loc.col, d.loc.stack)
        if key not in self.reported_keys:  # one report per root cause, not per unrolled iteration
            self.reported_keys.add(key)
            self.sink.report(d)

    def precheck(self, fn: Function) -> None:
        """Report constructs outside the subset anywhere in a kernel, including code that
        specialisation does not reach (a linter sees every problem in one run)."""
        for node in ast.walk(fn.node):
            if type(node) in self.language.rules.unsupported_syntax or isinstance(
                node, (ast.Global, ast.Nonlocal)
            ):
                self.report(self.error_node(self.unsupported(node), node))
            elif isinstance(node, ast.Compare) and self.language.rules.is_only_against_none:
                for op, left, right in zip(
                    node.ops, [node.left, *node.comparators], node.comparators
                ):
                    if isinstance(op, (ast.Is, ast.IsNot)) and not (
                        _is_none(left) or _is_none(right)
                    ):
                        self.report(self.error_node(_is_error(node), node))

    def print_out(self, text: str) -> None:
        if self.attempts:  # Python prints once per iteration: unroll to do the same
            raise SymbolicAbort(self.attempts[-1], "print() in the loop body")
        self.output.append(text)

    def error_node(self, err: UserError, node: ast.AST) -> UserError:
        if getattr(err, "loc", None) is None:
            err.loc = self.loc(err.node or node)
        return err

    # -----------------------------------------------------------------------------------------
    # dispatch

    def visit(self, node: ast.AST):
        method = self._visitors.get(type(node))
        if method is None:
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is None:
                raise self.error_node(self.unsupported(node), node)
            self._visitors[type(node)] = method
        try:
            return method(node)
        except UserError as err:
            raise self.error_node(err, node) from None
        except NonConstExtent as e:
            self.need_concrete(e.extent)
            raise

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
            self.visit(stmt)
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
            if err.code in ABORT_CODES and self.in_kernel:
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
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)):
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

    # -----------------------------------------------------------------------------------------
    # names

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
        if isinstance(value, Poison):
            raise PoisonError()
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
        scope = self.scope
        for att in self.attempts:
            if att.scope is scope:
                if name in att.read_outer:
                    raise SymbolicAbort(att, f"'{name}' is carried between iterations")
                att.written.add(name)
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

    # -----------------------------------------------------------------------------------------
    # symbolic values

    def need_concrete(self, v, what: str = "a compile-time integer"):
        """`v` where Python needs a concrete value: a symbolic loop variable aborts its loop."""
        v = norm_int(v)
        if is_symbolic(v):
            raise self._abort_for(v, f"the loop variable is used as {what}")
        return v

    def _abort_for(self, v: Affine, reason: str) -> SymbolicAbort:
        for att in reversed(self.attempts):
            if att.var in v.vars:
                return SymbolicAbort(att, reason)
        for var in v.vars:
            if var in self.loop_keys:  # escaped from a finished symbolic loop: unroll that one
                raise RestartUnrolled(self.loop_keys[var])
        raise UserError(
            "err_local_variable_used_out_of_scope",
            "a value computed from the induction variable of a loop that stays a hardware "
            "loop is used after the loop",
            None,
            "unroll the loop with range() / nl.static_range()",
        )

    def affine_bounds(self, v: Affine) -> tuple[int, int] | None:
        """(min, max) of `v` over the iterations of the symbolic loops being specialised; None
        if it uses the variable of a loop that is not one of them."""
        lo = hi = v.const
        for var in v.vars:
            its = next((a.iterations for a in self.attempts if a.var == var), None)
            if not its:
                return None
            ends = (v.coeff(var) * its[0], v.coeff(var) * its[-1])
            lo, hi = lo + min(ends), hi + max(ends)
        return lo, hi

    def need_int(self, v, what: str = "an integer") -> int:
        v = self.need_concrete(v)
        if isinstance(v, Poison):
            raise PoisonError()
        if not isinstance(v, int) or isinstance(v, bool):
            raise UserError("err_type_error", f"expected {what}, got {type_name(v)}")
        return v

    def deep_concrete(self, v):
        """`v` with every symbolic integer inside it resolved (aborting the loop if any)."""
        if isinstance(v, Affine):
            return self.need_concrete(v)
        if isinstance(v, tuple):
            return tuple(self.deep_concrete(x) for x in v)
        if isinstance(v, list):
            for x in v:
                self.deep_concrete(x)
        return v

    def touch(self, obj) -> None:
        """Called before mutating `obj`: state that outlives a symbolic loop body forces the
        loop to be unrolled, since one symbolic pass would mutate it once, not per iteration."""
        if not self.attempts:
            return
        att = self.attempts[-1]
        if att.reachable is None:
            att.reachable = self._reachable(att)
        if id(obj) in att.reachable:
            raise SymbolicAbort(att, "the loop body mutates compile-time state")

    def _reachable(self, att: Attempt) -> set[int]:
        seen: set[int] = set()
        stack: list = [att.snapshot]
        for scope in att.roots:
            stack.append(scope)
        for m in self.module_by_file.values():
            stack.append(m.scope)
        while stack:
            v = stack.pop()
            if isinstance(v, _PLAIN) or id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, Scope):
                stack.extend((att.snapshot if v is att.scope else v.vars).values())
                if v.parent is not None:
                    stack.append(v.parent)
            elif isinstance(v, (list, tuple)):
                stack.extend(v)
            elif isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, Instance):
                stack.extend(v.attrs.values())
                stack.append(v.cls)
            elif isinstance(v, NkiClass):
                stack.extend(v.attrs.values())
            elif isinstance(v, Function):
                stack.append(v.scope)
                stack.extend(v.defaults)
                stack.extend(v.kw_defaults.values())
            elif isinstance(v, BoundMethod):
                stack += [v.func, v.self_value]
            elif isinstance(v, ModuleValue) and v.source is not None:
                stack.append(v.source.scope)
            elif isinstance(v, Builtin):
                stack.append(v.fn)
            elif isinstance(v, types.FunctionType):  # a builtin's closure (bound methods, partial)
                stack.extend(c.cell_contents for c in v.__closure__ or () if _cell_full(c))
        return seen

    # -----------------------------------------------------------------------------------------
    # statements

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
        for target in node.targets:
            self.assign(target, value)

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
            self.store_name(target.id, self.binop(node.op, current, self.visit(node.value), True))
        elif isinstance(target, ast.Attribute):
            obj = self.visit(target.value)
            current = self.getattr(obj, target.attr, target)
            new = self.binop(node.op, current, self.visit(node.value), True)
            self.setattr(obj, target.attr, new)
        elif isinstance(target, ast.Subscript):
            obj = self.visit(target.value)
            key = self.visit(target.slice)
            if isinstance(obj, TensorView):
                raise UserError(
                    "err_tensor_operator",
                    "augmented assignment to a tensor is not supported",
                    node,
                    "compute into the tile with a nki.isa instruction (e.g. tensor_tensor)",
                )
            current = self.getitem(obj, key)
            self.setitem(obj, key, self.binop(node.op, current, self.visit(node.value), True))
        else:
            raise self.unsupported(target)

    def assign(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, TensorView) and not value.tensor.label:
                value.tensor.label = target.id
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
        if self.condition(node.test):
            self.exec_block(node.body)
        else:
            self.exec_block(node.orelse)

    def condition(self, test: ast.AST) -> bool:
        value = self.visit(test)
        if isinstance(value, TensorView):
            raise UserError(
                "err_dynamic_control_flow_not_supported",
                "control flow cannot depend on a tensor's contents",
                test,
                "conditions must be compile-time values (shapes, ints, bools); select at "
                "runtime with nisa.affine_select / tensor_copy_predicated",
            )
        return self.truth(value)

    def visit_While(self, node: ast.While):
        while self.condition(node.test):
            self._count_iteration(node)
            try:
                self.exec_block(node.body)
            except BreakSignal:
                return
            except ContinueSignal:
                continue
        self.exec_block(node.orelse)

    def _count_iteration(self, node: ast.AST) -> None:
        self.iterations += 1
        if self.iterations > MAX_ITERATIONS:
            raise UserError(
                "err_specialisation_limit",
                f"specialisation unrolled more than {MAX_ITERATIONS} loop iterations",
                node,
                "use nl.affine_range for loops whose body does not depend on the iteration "
                "at compile time, so they stay hardware loops",
            )

    def visit_For(self, node: ast.For):
        iterable = self.visit(node.iter)
        if (
            isinstance(iterable, RangeValue)
            and iterable.kind in ("affine", "sequential")
            and isinstance(node.target, ast.Name)
            and not self.unroll_all
            and (self.module.file, node.lineno, node.col_offset) not in self.unroll_loops
            and self.in_kernel
            and self.lambda_depth == 0
            and len(iterable.as_range()) >= 2
            and self.run_symbolic(node, iterable)
        ):
            self.exec_block(node.orelse)
            return
        unrolled = None
        if isinstance(iterable, RangeValue) and iterable.kind == "affine" and self.in_kernel:
            name = node.target.id if isinstance(node.target, ast.Name) else "iteration"
            unrolled = UnrolledLoop(self.loop_header(node), name)
        for item in self.iterate(iterable, node.iter):
            self._count_iteration(node)
            self.assign(node.target, item)
            try:
                if unrolled is None:
                    self.exec_block(node.body)
                else:
                    with self.builder.unrolled_iteration(unrolled, item):
                        self.exec_block(node.body)
            except BreakSignal:
                return
            except ContinueSignal:
                continue
        self.exec_block(node.orelse)

    def loop_header(self, node: ast.For) -> Loc:
        """The span of `for target in iterable`."""
        loc, end = self.loc(node), node.iter
        return Loc(loc.file, loc.line, loc.col, end.end_lineno, end.end_col_offset + 1, loc.stack)

    def run_symbolic(self, node: ast.For, rv: RangeValue) -> bool:
        """Run the body once with a symbolic induction variable inside one IR loop; False
        (with every effect rolled back) when the loop has to be unrolled instead."""
        scope = self.scope
        att = Attempt(scope, dict(scope.vars), [f.scope for f in self.frames])
        block = self.builder.block
        start = len(block)
        self.attempts.append(att)
        try:
            with self.builder.loop(
                rv.start, rv.stop, rv.step, rv.kind, self.loop_header(node)
            ) as iv:
                att.var = iv.vars[0]
                att.iterations = rv.as_range()
                self.assign(node.target, iv)
                try:
                    self.exec_block(node.body)
                except ContinueSignal:
                    pass
                except (BreakSignal, ReturnSignal):
                    raise SymbolicAbort(att, "the body leaves the loop early") from None
        except SymbolicAbort as abort:
            self.attempts.pop()
            del block[start:]
            scope.vars.clear()
            scope.vars.update(att.snapshot)
            if abort.target is not att:
                raise
            return False
        self.attempts.pop()
        if not block[-1].body:
            del block[-1]
        for d in att.diags:
            self._emit_diag(d)
        last = rv.as_range()[-1]
        key = (self.module.file, node.lineno, node.col_offset)
        self.loop_keys[att.var] = key
        for name in att.written:
            if name in scope.vars:
                scope.vars[name] = self._after_loop(
                    scope.vars[name], att, last, name, key, rv.kind == "affine"
                )
        for outer in self.attempts:
            outer.tensors |= att.tensors
        return True

    def _after_loop(self, v, att: Attempt, last: int, name: str, key: tuple, affine: bool = False):
        """The value a name bound in a symbolic loop body has after the loop: the last
        iteration's where it is one value, else a marker that unrolls the loop when read."""
        env = {att.var: last}
        if isinstance(v, Affine):
            return norm_int(v.substitute(env))
        if isinstance(v, TensorView):
            if v.tensor in att.tensors:
                return Escaped(name, key, affine)
            return v.substitute(env)
        if isinstance(v, tuple):
            items = tuple(self._after_loop(x, att, last, name, key, affine) for x in v)
            return Escaped(name, key) if any(isinstance(x, Escaped) for x in items) else items
        if isinstance(v, (list, dict, Instance, Function)) and self._mentions(v, att):
            return Escaped(name, key)
        return v

    def _mentions(self, v, att: Attempt, depth: int = 0) -> bool:
        if depth > 50:
            return False
        if isinstance(v, Affine):
            return att.var in v.vars
        if isinstance(v, TensorView):
            return v.tensor in att.tensors or att.var in v.offset.vars
        if isinstance(v, (list, tuple)):
            return any(self._mentions(x, att, depth + 1) for x in v)
        if isinstance(v, dict):
            return any(self._mentions(x, att, depth + 1) for x in v.values())
        if isinstance(v, Instance):
            return any(self._mentions(x, att, depth + 1) for x in v.attrs.values())
        if isinstance(v, Function):
            return any(self._mentions(x, att, depth + 1) for x in v.defaults)
        return False

    def iterate(self, value, node: ast.AST | None = None) -> list:
        """The items of an iterable compile-time value."""
        if isinstance(value, Poison):
            raise PoisonError()
        if isinstance(value, RangeValue):
            return list(value.as_range())
        if isinstance(value, (list, tuple, str)):
            return list(value)
        if isinstance(value, dict):
            return list(value.keys())
        if isinstance(value, NkiClass) and value.is_enum:
            return list(value.members.values())
        if isinstance(value, TensorView):
            raise UserError(
                "err_dynamic_control_flow_not_supported",
                "cannot iterate over a tensor at specialisation time",
                node,
                "iterate over range(t.shape[0]) and index the tensor",
            )
        raise UserError("err_type_error", f"{type_name(value)} is not iterable", node)

    def visit_Return(self, node: ast.Return):
        for att in self.attempts:
            if att.scope is self.scope:
                raise SymbolicAbort(att, "return inside the loop body")
        value = None if node.value is None else self.visit(node.value)
        if self.frame.is_kernel:
            self.mark_outputs(value, node)
        raise ReturnSignal(value)

    def mark_outputs(self, value, node: ast.Return) -> None:
        items = value if isinstance(value, tuple) else (value,)
        if value is None:
            return
        for item in items:
            if not isinstance(item, TensorView):
                raise UserError(
                    "err_type_error",
                    f"a kernel returns tensors, not {type_name(item)}",
                    node.value,
                    "return a tensor allocated with nl.ndarray(..., buffer=nl.shared_hbm)",
                )
            if item.buffer != "shared_hbm" and item.tensor.kind != "input":
                raise UserError(
                    "err_output_not_shared_hbm",
                    f"returned tensor '{item.tensor.label or item.tensor.name}' is in "
                    f"{item.buffer}; kernel outputs must be in shared_hbm",
                    node.value,
                    "allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm)",
                )
        if isinstance(node.value, ast.Name) and isinstance(value, TensorView):
            value.tensor.label = value.tensor.label or node.value.id
        for item in items:
            if item.tensor not in self.kernel.returns:
                self.builder.mark_output(item.tensor)

    def visit_Assert(self, node: ast.Assert):
        value = self.visit(node.test)
        if isinstance(value, TensorView):
            raise UserError(
                "err_ambiguous_tensor_truth_value",
                "the truth value of a tensor is ambiguous at specialisation time",
                node.test,
            )
        if not self.truth(value):
            text = ast.get_source_segment(_source(self.module), node.test) or "condition"
            msg = self.to_str(self.visit(node.msg)) if node.msg is not None else None
            raise UserError(
                "err_assert_failed",
                f"assertion failed: {msg}" if msg else f"assertion failed: {text}",
                node,
                None if msg is None else f"the failing condition is `{text}`",
            )

    def visit_Raise(self, node: ast.Raise):
        exc = None if node.exc is None else self.visit(node.exc)
        if isinstance(exc, pylib.ExceptionValue):
            message = f"{exc.kind}: {exc.message}" if exc.message else exc.kind
        elif isinstance(exc, PyType):
            message = exc.name
        else:
            message = "exception raised"
        raise UserError("err_raised_exception", message, node)

    def visit_With(self, node: ast.With):
        for item in node.items:
            ctx = self.visit(item.context_expr)
            if not isinstance(ctx, ContextManagerValue) or item.optional_vars is not None:
                raise UserError(
                    "err_unsupported_syntax",
                    "only `with nl.no_reorder():` is supported",
                    item.context_expr,
                    "remove the with statement",
                )
        self.exec_block(node.body)

    # functions and classes --------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef):
        fn = self.make_function(node.name, node)
        value: object = fn
        for dec in reversed(node.decorator_list):
            value = self.call(self.visit(dec), [value], {}, CallSite(dec))
        self.store_name(node.name, value)

    def make_function(self, name: str, node) -> Function:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Yield, ast.YieldFrom, ast.Await)):
                raise self.error_node(self.unsupported(sub), sub)
        fn = Function(name, node, self.scope, self.module)
        args = node.args
        fn.defaults = [self.visit(d) for d in args.defaults]
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                fn.kw_defaults[a.arg] = self.visit(d)
        return fn

    def visit_Lambda(self, node: ast.Lambda):
        return self.make_function("<lambda>", node)

    def visit_ClassDef(self, node: ast.ClassDef):
        if node.keywords:
            raise self.unsupported(node.keywords[0])
        bases = []
        is_enum = int_enum = False
        for b in node.bases:
            value = self.visit(b)
            if isinstance(value, NkiClass):
                bases.append(value)
            elif isinstance(value, EnumBase):
                is_enum = True
                int_enum = int_enum or value.name == "IntEnum"
            elif isinstance(value, NkiObjectBase):
                pass
            else:
                raise UserError(
                    "err_unsupported_syntax",
                    f"class '{node.name}' may only inherit from nl.NKIObject, enum.Enum or "
                    f"another such class, not {type_name(value)}",
                    b,
                )
        cls = NkiClass(node.name, tuple(bases), self.module)
        cls.is_enum = cls.is_enum or is_enum
        cls.int_enum = cls.int_enum or int_enum
        body_scope = Scope(self.scope, "class")
        frame = Frame(body_scope, self.module, self.frame.func)
        self.frames.append(frame)
        try:
            self.exec_block(node.body)
        finally:
            self.frames.pop()
        for name, v in body_scope.vars.items():
            if isinstance(v, Function):
                v.scope = self.scope  # methods close over the enclosing scope, not the class body
                v.owner = cls
            elif isinstance(v, (StaticMethod, ClassMethod, Property)):
                inners = (v.fget, v.fset) if isinstance(v, Property) else (v.func,)
                for inner in inners:
                    if isinstance(inner, Function):
                        inner.scope = self.scope
                        inner.owner = cls
            cls.attrs[name] = v
        if cls.is_enum:
            self._make_enum(cls, node)
        else:
            self._collect_fields(cls, node)
        value: object = cls
        for dec in reversed(node.decorator_list):
            value = self.call(self.visit(dec), [value], {}, CallSite(dec))
        self.store_name(node.name, value)

    def _collect_fields(self, cls: NkiClass, node: ast.ClassDef) -> None:
        fields: dict[str, FieldSpec] = {}
        for b in reversed(cls.bases):
            for f in b.fields:
                fields[f.name] = f
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                name = stmt.target.id
                if _is_classvar(stmt.annotation):
                    continue
                default = cls.attrs.get(name, MISSING)
                if isinstance(default, FieldDefault):
                    spec = FieldSpec(name, default.default, default.factory)
                    if default.default is MISSING:
                        cls.attrs.pop(name, None)
                    else:
                        cls.attrs[name] = default.default
                else:
                    spec = FieldSpec(name, default)
                fields.pop(name, None)
                fields[name] = spec
        cls.fields = list(fields.values())

    def _make_enum(self, cls: NkiClass, node: ast.ClassDef) -> None:
        next_auto = 1
        for name, v in list(cls.attrs.items()):
            if name.startswith("_") or isinstance(
                v, (Function, StaticMethod, ClassMethod, Property)
            ):
                continue
            if isinstance(v, EnumAuto):
                v = next_auto
            if isinstance(v, int) and not isinstance(v, bool):
                next_auto = v + 1
            member = EnumMember(cls, name, v)
            cls.members[name] = member
            cls.attrs[name] = member

    # imports ----------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            module = self.import_module(alias.name, node)
            if alias.asname:
                self.store_name(alias.asname, module)
            else:
                top = alias.name.split(".")[0]
                self.store_name(top, self.import_module(top, node))

    def visit_ImportFrom(self, node: ast.ImportFrom):
        name = self.loader.absolute_name(node.module, node.level, self.module)
        if name is None:
            raise UserError(
                "err_import_error",
                "attempted relative import beyond the top-level package",
                node,
            )
        module = self.import_module(name, node)
        if isinstance(module, OpaqueModule):
            if node.level:
                raise UserError("err_import_error", f"no module named '{name}'", node)
            for alias in node.names:
                if alias.name != "*":
                    self.store_name(
                        alias.asname or alias.name,
                        OpaqueModule(f"{name}.{alias.name}", module.found),
                    )
            return
        for alias in node.names:
            if alias.name == "*":
                exported = module.attrs.get("__all__")
                names = (
                    list(exported)
                    if isinstance(exported, (list, tuple))
                    else [n for n in module.attrs if not n.startswith("_")]
                )
                for n in names:
                    self.store_name(n, module.attrs[n])
                continue
            if alias.name in module.attrs:
                value = module.attrs[alias.name]
            else:
                try:
                    value = self.import_module(f"{name}.{alias.name}", node)
                except UserError:
                    raise UserError(
                        "err_import_error",
                        f"cannot import name '{alias.name}' from '{name}'",
                        node,
                        self.suggest(alias.name, module.attrs),
                    ) from None
                if module.strict and isinstance(value, OpaqueModule) and not value.found:
                    # `from nki.language import arange`: an NKI module has no such name; report
                    # it here as `nl.arange` would be, not as a missing module at the first use.
                    self.getattr(module, alias.name, node)
            self.store_name(alias.asname or alias.name, value)

    def import_module(self, name: str, node: ast.AST) -> ModuleValue:
        if name in self.modules:
            return self.modules[name]
        if name == "neuronxcc" or name.startswith("neuronxcc."):
            raise UserError(
                "err_unsupported_api",
                f"the Beta 1 namespace '{name}' is not supported by nkic",
                node,
                "use the NKI 0.3.0 modules: import nki, nki.language as nl, nki.isa as nisa",
            )
        if name in self.known_modules:
            mod = self.known_modules[name]
            self.modules[name] = mod
            return mod
        parent = None
        if "." in name:
            parent = self.import_module(name.rsplit(".", 1)[0], node)
            if isinstance(parent, OpaqueModule):
                return OpaqueModule(name, parent.found)
        path = self.loader.find_module(name, self.module)
        if path is None or self.loader.is_installed(path) or name.split(".")[0] in _HOST_ONLY:
            return OpaqueModule(name, path is not None)
        mod = self.load_source_module(name, path, node)
        if parent is not None and parent.source is not None:
            parent.attrs.setdefault(name.rsplit(".", 1)[1], mod)
        return mod

    def load_source_module(self, name: str, path: str, node: ast.AST | None) -> ModuleValue:
        if path in self.module_by_file:
            src = self.module_by_file[path]
            return self.modules.setdefault(name, ModuleValue(name, src.scope.vars, False, src))
        parsed = self.loader.parse(path)
        if isinstance(parsed, UserError):
            raise parsed
        tree, text = parsed
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        src = SourceModule(name, path, package, tree, Scope(None, "module"), text.splitlines())
        src.scope.vars["__name__"] = name
        src.scope.vars["__file__"] = path
        mod = ModuleValue(name, src.scope.vars, False, src)
        self.modules[name] = mod
        self.module_by_file[path] = src
        saved_stack = self.call_stack
        self.call_stack = [self.loc(node, with_stack=False)] if node is not None else []
        self.frames.append(Frame(src.scope, src))
        saved_kernel, saved_attempts = self.in_kernel, self.attempts
        self.in_kernel = False
        self.attempts = []  # a module's body never depends on the loop that imports it
        try:
            self.exec_block(tree.body)
        finally:
            self.frames.pop()
            self.call_stack = saved_stack
            self.in_kernel, self.attempts = saved_kernel, saved_attempts
        return mod

    # -----------------------------------------------------------------------------------------
    # expressions

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bytes, complex)):
            raise self.unsupported(node)
        return node.value

    def visit_Name(self, node: ast.Name):
        return self.load_name(node.id, node)

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List):
        return self._elements(node.elts)

    def _elements(self, elts) -> list:
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out += self.iterate(self.visit(e.value), e)
            else:
                out.append(self.visit(e))
        return out

    def visit_Dict(self, node: ast.Dict):
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                extra = self.visit(v)
                if not isinstance(extra, dict):
                    raise UserError(
                        "err_type_error", f"cannot unpack {type_name(extra)} with **", v
                    )
                out.update(extra)
                continue
            key = self.visit(k)
            self.check_key(key, k)
            out[key] = self.visit(v)
        return out

    def check_key(self, key, node=None) -> None:
        if self.language.rules.string_dict_keys and not isinstance(key, str):
            raise UserError(
                "err_type_error",
                f"dict keys must be strings in NKI, got {type_name(key)}",
                node,
            )

    def visit_Slice(self, node: ast.Slice):
        parts = [None if p is None else self.visit(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Subscript(self, node: ast.Subscript):
        return self.getitem(self.visit(node.value), self.visit(node.slice), node)

    def visit_Attribute(self, node: ast.Attribute):
        return self.getattr(self.visit(node.value), node.attr, node)

    def visit_IfExp(self, node: ast.IfExp):
        return self.visit(node.body) if self.condition(node.test) else self.visit(node.orelse)

    def visit_BoolOp(self, node: ast.BoolOp):
        value = None
        for i, sub in enumerate(node.values):
            value = self.visit(sub)
            if i == len(node.values) - 1:
                break
            if isinstance(value, TensorView):
                raise UserError(
                    "err_ambiguous_tensor_truth_value",
                    "the truth value of a tensor is ambiguous",
                    sub,
                    "and/or/not need compile-time values; combine tensors with nisa "
                    "instructions (op=nl.logical_and)",
                )
            t = self.truth(value)
            if isinstance(node.op, ast.And) and not t:
                return value
            if isinstance(node.op, ast.Or) and t:
                return value
        return value

    def visit_UnaryOp(self, node: ast.UnaryOp):
        v = self.visit(node.operand)
        if isinstance(v, Poison):
            raise PoisonError()
        if isinstance(node.op, ast.Not):
            if isinstance(v, TensorView):
                raise UserError(
                    "err_ambiguous_tensor_truth_value",
                    "the truth value of a tensor is ambiguous",
                    node.operand,
                )
            return not self.truth(v)
        if isinstance(v, TensorView):
            raise UserError(
                "err_tensor_operator",
                "operators on tensors are not supported",
                node,
                "use a nki.isa instruction such as nisa.tensor_scalar",
            )
        if isinstance(v, Affine):
            if isinstance(node.op, ast.USub):
                return norm_int(-v)
            if isinstance(node.op, ast.UAdd):
                return v
            v = self.need_concrete(v)
        if not isinstance(v, (int, float)):
            raise UserError(
                "err_type_error", f"bad operand type for unary operator: {type_name(v)}"
            )
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Invert):
            if isinstance(v, float):
                raise UserError("err_type_error", "bad operand type for ~: 'float'")
            return ~v
        raise self.unsupported(node)

    def visit_BinOp(self, node: ast.BinOp):
        return self.binop(node.op, self.visit(node.left), self.visit(node.right))

    def binop(self, op: ast.operator, a, b, inplace: bool = False):
        if isinstance(a, Poison) or isinstance(b, Poison):
            raise PoisonError()
        sym = _BINOP_SYMBOLS.get(type(op), "?")
        if isinstance(a, TensorView) or isinstance(b, TensorView):
            raise UserError(
                "err_tensor_operator",
                f"the operator '{sym}' is not defined on tensors in NKI 0.3.0",
                None,
                f"call nl.{_NL_BINOPS.get(sym, 'add')}(a, b) for a new tile, or write into a "
                "tile with a nki.isa instruction, e.g. nisa.tensor_tensor(dst, a, b, op=nl.add)",
            )
        if isinstance(a, Affine) or isinstance(b, Affine):
            return self.affine_binop(op, a, b)
        if isinstance(a, Instance):
            method = a.cls.lookup(_DUNDER.get(type(op), ""))
            if isinstance(method, Function):
                return self.call_function(method, [a, b], {}, CallSite(None))
        if inplace and isinstance(a, list) and isinstance(op, ast.Add):
            self.touch(a)
            a.extend(self.iterate(b))
            return a
        if not _arith_ok(a, b):
            raise UserError(
                "err_type_error",
                f"unsupported operand types for {sym}: {type_name(a)} and {type_name(b)}",
            )
        fn = _BINOPS.get(type(op))
        if fn is None:
            raise UserError("err_unsupported_syntax", f"the operator '{sym}' is not supported")
        if isinstance(op, (ast.Mult,)) and isinstance(a, (list, str, tuple)):
            if isinstance(b, int) and len(a) * max(b, 0) > MAX_ITERATIONS:
                raise UserError("err_value_error", "sequence repetition is too large")
        if isinstance(op, ast.Pow) and isinstance(b, int) and abs(b) > 4096:
            raise UserError("err_value_error", "exponent too large")
        if isinstance(op, ast.LShift) and isinstance(b, int) and b > 4096:
            raise UserError("err_value_error", "shift count too large")
        try:
            result = fn(a, b)
        except ZeroDivisionError:
            raise UserError("err_value_error", f"division by zero in '{sym}'") from None
        except (TypeError, ValueError, OverflowError) as e:
            raise UserError("err_type_error", f"invalid operation '{sym}': {e}") from None
        if type(result) is int and not INT32_MIN <= result <= INT32_MAX:
            raise _int32_overflow(f"{a} {sym} {b} = {result}")
        return result

    def affine_binop(self, op: ast.operator, a, b):
        if (
            isinstance(a, bool)
            or isinstance(b, bool)
            or isinstance(a, float)
            or isinstance(b, float)
        ):
            a, b = self.need_concrete(a), self.need_concrete(b)
            return self.binop(op, a, b)
        if not isinstance(a, (int, Affine)) or not isinstance(b, (int, Affine)):
            a, b = self.need_concrete(a), self.need_concrete(b)
            return self.binop(op, a, b)
        try:
            if isinstance(op, ast.Add):
                return self._int32_affine(norm_int(Affine.of(a) + b))
            if isinstance(op, ast.Sub):
                return self._int32_affine(norm_int(Affine.of(a) - b))
            if isinstance(op, ast.Mult):
                return self._int32_affine(norm_int(Affine.of(a) * Affine.of(b)))
            if isinstance(op, ast.FloorDiv) and isinstance(b, int):
                return norm_int(Affine.of(a).floordiv(b))
            if isinstance(op, ast.Mod) and isinstance(b, int) and b != 0:
                x = Affine.of(a)
                if all(c % b == 0 for _, c in x.terms):
                    return x.const % b
        except NonAffineError:
            pass
        except ZeroDivisionError:
            raise UserError("err_value_error", "integer division by zero") from None
        sym = a if is_symbolic(a) else b
        raise self._abort_for(norm_int(Affine.of(sym)), "not affine")

    def _int32_affine(self, v):
        """`v`, unless it leaves the int32 range in some iteration of a symbolic loop: then the
        loop unrolls, so that the overflow is reported for that iteration (as when unrolled)."""
        bounds = self.affine_bounds(v) if is_symbolic(v) else None
        if bounds is not None and (bounds[0] < INT32_MIN or bounds[1] > INT32_MAX):
            raise self._abort_for(v, "an integer overflow in some iteration")
        return v

    def visit_Compare(self, node: ast.Compare):
        left = self.visit(node.left)
        left_node = node.left
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            if isinstance(op, (ast.Is, ast.IsNot)):
                if self.language.rules.is_only_against_none and not (
                    _is_none(left_node) or _is_none(right_node)
                ):
                    raise _is_error(node)
                result = (left is right) if isinstance(op, ast.Is) else (left is not right)
            else:
                result = self.compare(op, left, right)
            if not result:
                return False
            left, left_node = right, right_node
        return True

    def compare(self, op: ast.cmpop, a, b) -> bool:
        if isinstance(a, Poison) or isinstance(b, Poison):
            raise PoisonError()
        if isinstance(a, TensorView) or isinstance(b, TensorView):
            if isinstance(op, (ast.In, ast.NotIn)) and not isinstance(b, TensorView):
                pass
            else:
                raise UserError(
                    "err_tensor_operator",
                    "tensors cannot be compared at specialisation time",
                    None,
                    "compare tensor metadata (t.shape, t.dtype) or use an ALU comparison op",
                )
        a, b = self.deep_concrete(a), self.deep_concrete(b)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(b, RangeValue):
                b = b.as_range()
            if isinstance(b, dict):
                b = list(b.keys())
            if not isinstance(b, (list, tuple, str, range)):
                raise UserError("err_type_error", f"'in' needs a container, got {type_name(b)}")
            try:
                found = a in b
            except TypeError as e:
                raise UserError("err_type_error", str(e)) from None
            return found if isinstance(op, ast.In) else not found
        if isinstance(a, Instance) and isinstance(op, (ast.Eq, ast.NotEq)):
            method = a.cls.lookup("__eq__")
            if isinstance(method, Function):
                eq = self.truth(self.call_function(method, [a, b], {}, CallSite(None)))
                return eq if isinstance(op, ast.Eq) else not eq
        if isinstance(op, (ast.Eq, ast.NotEq)):
            a, b = _int_enum_value(a), _int_enum_value(b)
            return operator.eq(a, b) if isinstance(op, ast.Eq) else operator.ne(a, b)
        if isinstance(a, EnumMember) or isinstance(b, EnumMember):
            raise UserError("err_type_error", "enum members only support == and !=")
        if not (
            (isinstance(a, (int, float)) and isinstance(b, (int, float)))
            or (type(a) is type(b) and isinstance(a, (str, tuple, list)))
        ):
            raise UserError("err_type_error", f"cannot order {type_name(a)} and {type_name(b)}")
        try:
            return _CMPOPS[type(op)](a, b)
        except TypeError as e:
            raise UserError("err_type_error", str(e)) from None

    def truth(self, v) -> bool:
        if isinstance(v, Poison):
            raise PoisonError()
        if isinstance(v, Affine):
            v = self.need_concrete(v, "a condition")
        if isinstance(v, TensorView):
            raise UserError(
                "err_ambiguous_tensor_truth_value",
                "the truth value of a tensor is ambiguous",
                None,
                "conditions must be compile-time values; compare t.shape or use `t is None`",
            )
        if isinstance(v, (bool, int, float, str, list, tuple, dict, type(None))):
            return bool(v)
        if isinstance(v, RangeValue):
            return len(v.as_range()) > 0
        if isinstance(v, Instance):
            for name in ("__bool__", "__len__"):
                method = v.cls.lookup(name)
                if isinstance(method, Function):
                    return bool(self.call_function(method, [v], {}, CallSite(None)))
        return True

    def visit_JoinedStr(self, node: ast.JoinedStr):
        return "".join(self.to_str(self.visit(v)) for v in node.values)

    def visit_FormattedValue(self, node: ast.FormattedValue):
        v = self.deep_concrete(self.visit(node.value))
        if node.conversion == ord("r"):
            v = self.to_repr(v)
        elif node.conversion in (ord("s"), ord("a")):
            v = self.to_str(v)
        spec = "" if node.format_spec is None else self.visit(node.format_spec)
        if not isinstance(v, (int, float, str)):
            v = self.to_str(v)
        try:
            return format(v, spec)
        except (ValueError, TypeError) as e:
            raise UserError("err_value_error", f"invalid format spec {spec!r}: {e}") from None

    def to_str(self, v) -> str:
        if isinstance(v, str):
            return v
        return self.to_repr(v)

    def to_repr(self, v) -> str:
        v = norm_int(v)
        if isinstance(v, Affine):
            v = self.need_concrete(v, "a string")
        if isinstance(v, (bool, int, float, type(None), str)):
            return repr(v)
        if isinstance(v, tuple):
            inner = ", ".join(self.to_repr(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, list):
            return "[" + ", ".join(self.to_repr(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self.to_repr(x)}" for k, x in v.items()) + "}"
        if isinstance(v, Instance):
            method = v.cls.lookup("__repr__")
            if isinstance(method, Function):
                return self.to_str(self.call_function(method, [v], {}, CallSite(None)))
            inner = ", ".join(f"{k}={self.to_repr(x)}" for k, x in v.attrs.items())
            return f"{v.cls.name}({inner})"
        if isinstance(v, EnumMember):
            return f"{v.cls.name}.{v.name}"
        if isinstance(v, RangeValue):
            return repr(v.as_range())
        if isinstance(v, slice):
            return f"slice({self.to_repr(v.start)}, {self.to_repr(v.stop)}, {self.to_repr(v.step)})"
        if isinstance(v, DynSlice):
            return f"nl.ds({self.to_repr(v.start)}, {v.size})"
        if isinstance(v, NkiClass):
            return f"<class '{v.name}'>"
        if isinstance(v, Function):
            return f"<function {v.name}>"
        if isinstance(v, IsaEnumMember):
            return f"{v.enum}.{v.name}"
        return repr(v)

    # comprehensions -----------------------------------------------------------------------------

    def visit_ListComp(self, node: ast.ListComp):
        out: list = []
        self._comprehension(node.generators, lambda: out.append(self.visit(node.elt)))
        return out

    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp):
        out: dict = {}

        def add():
            key = self.visit(node.key)
            self.check_key(key, node.key)
            out[key] = self.visit(node.value)

        self._comprehension(node.generators, add)
        return out

    def _comprehension(self, generators, emit) -> None:
        frame = Frame(Scope(self.scope, "comprehension"), self.module, self.frame.func)
        first_iter = self.visit(generators[0].iter)
        self.frames.append(frame)
        try:
            self._comp_level(generators, 0, first_iter, emit)
        finally:
            self.frames.pop()

    def _comp_level(self, generators, i: int, iterable, emit) -> None:
        gen = generators[i]
        if gen.is_async:
            raise self.unsupported(gen)
        for item in self.iterate(iterable, gen.iter):
            self._count_iteration(gen.iter)
            self.assign(gen.target, item)
            if all(self.condition(c) for c in gen.ifs):
                if i + 1 < len(generators):
                    self._comp_level(generators, i + 1, self.visit(generators[i + 1].iter), emit)
                else:
                    emit()

    # -----------------------------------------------------------------------------------------
    # attributes and items

    def getattr(self, obj, name: str, node: ast.AST | None = None):
        if isinstance(obj, Poison):
            raise PoisonError()
        if isinstance(obj, OpaqueModule):
            raise _opaque_error(obj, node)
        if isinstance(obj, ModuleValue):
            if name in obj.attrs:
                value = obj.attrs[name]
                if isinstance(value, Poison):
                    raise PoisonError()
                return value
            if obj.strict:
                hint = self.suggest(name, [k for k in obj.attrs if not k.startswith("_")])
                unsupported = self.language.unsupported_message(obj.name, name)
                if unsupported:
                    raise UserError("err_unsupported_api", unsupported, node)
                raise UserError(
                    "err_unknown_api",
                    f"{obj.name} has no attribute '{name}'",
                    node,
                    hint,
                )
            raise UserError(
                "err_attribute_error",
                f"module '{obj.name}' has no attribute '{name}'",
                node,
                self.suggest(name, obj.attrs),
            )
        if isinstance(obj, Instance):
            if name in obj.attrs:
                return obj.attrs[name]
            found = obj.cls.lookup(name)
            if found is not MISSING:
                return self._bind_class_attr(found, obj, obj.cls)
            if name == "__class__":
                return obj.cls
            raise UserError(
                "err_attribute_error",
                f"'{obj.cls.name}' object has no attribute '{name}'",
                node,
                self.suggest(name, list(obj.attrs) + list(_class_names(obj.cls))),
            )
        if isinstance(obj, NkiClass):
            found = obj.lookup(name)
            if found is not MISSING:
                if isinstance(found, ClassMethod):
                    return BoundMethod(found.func, obj)
                if isinstance(found, StaticMethod):
                    return found.func
                return found
            if name == "__name__":
                return obj.name
            raise UserError(
                "err_attribute_error",
                f"class '{obj.name}' has no attribute '{name}'",
                node,
                self.suggest(name, _class_names(obj)),
            )
        if isinstance(obj, SuperProxy):
            mro = (obj.obj.cls if isinstance(obj.obj, Instance) else obj.obj).mro()
            after = mro[mro.index(obj.owner) + 1 :] if obj.owner in mro else []
            for c in after:
                if name in c.attrs:
                    return self._bind_class_attr(c.attrs[name], obj.obj, c)
            if name == "__init__":
                return Builtin("object.__init__", lambda ip, call: None)
            raise UserError("err_attribute_error", f"'super' object has no attribute '{name}'")
        if isinstance(obj, EnumMember):
            if name == "name":
                return obj.name
            if name == "value":
                return obj.value
            found = obj.cls.lookup(name)
            if found is not MISSING and not isinstance(found, EnumMember):
                return self._bind_class_attr(found, obj, obj.cls)
            raise UserError("err_attribute_error", f"enum member has no attribute '{name}'", node)
        if isinstance(obj, Function) and name == "__name__":
            return obj.name
        value = pylib.attribute(self, obj, name)
        if value is MISSING:
            value = self.language.attribute(self, obj, name)
        if value is not MISSING:
            return value
        raise UserError(
            "err_attribute_error",
            f"{type_name(obj)} has no attribute '{name}'",
            node,
        )

    def _bind_class_attr(self, found, obj, cls: NkiClass):
        if isinstance(found, Function):
            return BoundMethod(found, obj)
        if isinstance(found, StaticMethod):
            return found.func
        if isinstance(found, ClassMethod):
            return BoundMethod(found.func, cls)
        if isinstance(found, Property):
            return self.call(found.fget, [obj], {}, CallSite(None))
        return found

    def setattr(self, obj, name: str, value) -> None:
        if isinstance(obj, Poison):
            raise PoisonError()
        if isinstance(obj, Instance):
            if obj.cls.frozen and not self._initialising(obj):
                raise UserError(
                    "err_attribute_error",
                    f"cannot assign to field '{name}' of a frozen dataclass",
                    None,
                    "create a new instance with dataclasses.replace(obj, field=value)",
                )
            prop = obj.cls.lookup(name)
            if isinstance(prop, Property):
                if prop.fset is None:
                    raise UserError("err_attribute_error", f"property '{name}' has no setter")
                self.call(prop.fset, [obj, value], {}, CallSite(None))
                return
            self.touch(obj)
            obj.attrs[name] = value
            return
        if isinstance(obj, NkiClass):
            self.touch(obj)
            obj.attrs[name] = value
            return
        raise UserError("err_attribute_error", f"cannot set attribute '{name}' on {type_name(obj)}")

    def _initialising(self, obj: Instance) -> bool:
        return getattr(obj, "_initialising", False)

    def getitem(self, obj, key, node: ast.AST | None = None):
        if isinstance(obj, Poison) or isinstance(key, Poison):
            raise PoisonError()
        if isinstance(obj, TensorView):
            items = key if isinstance(key, tuple) else (key,)
            items = tuple(self._index_item(k) for k in items)
            return obj.index(items)
        if isinstance(obj, dict):
            self.check_key(key)
            if key not in obj:
                raise UserError(
                    "err_value_error", f"key {key!r} not found", None, self.suggest(key, obj)
                )
            return obj[key]
        if isinstance(obj, (list, tuple, str)):
            return self._sequence_item(obj, key)
        if isinstance(obj, RangeValue):
            return self._sequence_item(obj.as_range(), key)
        if isinstance(obj, NkiClass) and obj.is_enum:
            if key not in obj.members:
                raise UserError("err_value_error", f"'{obj.name}' has no member {key!r}")
            return obj.members[key]
        if isinstance(obj, Instance):
            method = obj.cls.lookup("__getitem__")
            if isinstance(method, Function):
                return self.call_function(method, [obj, key], {}, CallSite(node))
        sub = pylib.subscript(self, obj, key)
        if sub is not MISSING:
            return sub
        raise UserError("err_type_error", f"{type_name(obj)} is not subscriptable", node)

    def _index_item(self, k):
        if isinstance(k, slice):
            return k
        k = norm_int(k)
        if isinstance(k, Poison):
            raise PoisonError()
        return k

    def _sequence_item(self, seq, key):
        if isinstance(key, slice):
            parts = [
                None if p is None else self.need_int(p) for p in (key.start, key.stop, key.step)
            ]
            if parts[2] == 0:
                raise UserError("err_value_error", "slice step cannot be zero")
            result = seq[slice(*parts)]
            return list(result) if isinstance(result, range) else result
        idx = self.need_int(key, "an index")
        try:
            return seq[idx]
        except IndexError:
            raise UserError(
                "err_value_error", f"index {idx} out of range for a sequence of length {len(seq)}"
            ) from None

    def setitem(self, obj, key, value, node: ast.AST | None = None) -> None:
        if isinstance(obj, Poison) or isinstance(key, Poison):
            raise PoisonError()
        if isinstance(obj, TensorView):
            items = key if isinstance(key, tuple) else (key,)
            dst = obj.index(tuple(self._index_item(k) for k in items))
            nki_api.store_into(self, dst, value, CallSite(node))
            return
        if isinstance(obj, dict):
            self.check_key(key)
            self.touch(obj)
            obj[key] = value
            return
        if isinstance(obj, list):
            self.touch(obj)
            if isinstance(key, slice):
                parts = [
                    None if p is None else self.need_int(p) for p in (key.start, key.stop, key.step)
                ]
                obj[slice(*parts)] = self.iterate(value)
                return
            idx = self.need_int(key, "an index")
            try:
                obj[idx] = value
            except IndexError:
                raise UserError("err_value_error", f"list index {idx} out of range") from None
            return
        if isinstance(obj, Instance):
            method = obj.cls.lookup("__setitem__")
            if isinstance(method, Function):
                self.call_function(method, [obj, key, value], {}, CallSite(node))
                return
        raise UserError("err_type_error", f"{type_name(obj)} does not support item assignment")

    # -----------------------------------------------------------------------------------------
    # calls

    def visit_Call(self, node: ast.Call):
        fn = self.visit(node.func)
        args: list = []
        arg_nodes: list = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                items = self.iterate(self.visit(a.value), a)
                args += items
                arg_nodes += [a] * len(items)
            else:
                args.append(self.visit(a))
                arg_nodes.append(a)
        kwargs: dict = {}
        kw_nodes: dict = {}
        for k in node.keywords:
            if k.arg is None:
                extra = self.visit(k.value)
                if not isinstance(extra, dict):
                    raise UserError(
                        "err_type_error", f"cannot unpack {type_name(extra)} with **", k
                    )
                for name, v in extra.items():
                    kwargs[name] = v
                    kw_nodes[name] = k
            else:
                if k.arg in kwargs:
                    raise UserError("err_type_error", f"keyword argument '{k.arg}' repeated", k)
                kwargs[k.arg] = self.visit(k.value)
                kw_nodes[k.arg] = k
        return self.call(fn, args, kwargs, CallSite(node, arg_nodes, kw_nodes))

    def call(self, fn, args: list, kwargs: dict, call: CallSite):
        if isinstance(fn, Poison):
            raise PoisonError()
        if isinstance(fn, Function):
            return self.call_function(fn, args, kwargs, call)
        if isinstance(fn, BoundMethod):
            return self.call(fn.func, [fn.self_value, *args], kwargs, call)
        if isinstance(fn, Builtin):
            return _int32_result(self.call_builtin(fn, args, kwargs, call), fn.name, args)
        if isinstance(fn, NkiClass):
            return self.instantiate(fn, args, kwargs, call)
        if isinstance(fn, Instance):
            method = fn.cls.lookup("__call__")
            if isinstance(method, Function):
                return self.call_function(method, [fn, *args], kwargs, call)
        if isinstance(fn, OpaqueModule):
            raise _opaque_error(fn, call.node)
        if isinstance(fn, PyType):
            return _int32_result(pylib.call_type(self, fn, args, kwargs, call), fn.name, args)
        if isinstance(fn, (IsaInstr, NlOp)):
            self.check_nki_context(
                f"nisa.{fn.name}" if isinstance(fn, IsaInstr) else f"nl.{fn.name}", call
            )
            return self.language.call_api(self, fn, args, kwargs, call)
        if isinstance(fn, (StaticMethod, ClassMethod)):
            return self.call(fn.func, args, kwargs, call)
        raise UserError("err_type_error", f"{type_name(fn)} is not callable", call.node)

    def call_builtin(self, fn: Builtin, args: list, kwargs: dict, call: CallSite):
        if fn.nki_api:
            self.check_nki_context(fn.name, call)
        bind_error = pylib.check_signature(fn, args, kwargs)
        if bind_error is not None:
            code, message, kw = bind_error
            raise UserError(
                code, f"{fn.name}() {message}", call.arg_node(name=kw) if kw else call.node
            )
        return fn.fn(self, call, *args, **kwargs)

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

    def call_function(self, fn: Function, args: list, kwargs: dict, call: CallSite):
        if len(self.call_stack) >= MAX_CALL_DEPTH:
            raise UserError(
                "err_specialisation_limit",
                f"call depth exceeds {MAX_CALL_DEPTH} (unbounded recursion in '{fn.name}'?)",
                call.node,
                "make sure the recursion terminates at specialisation time",
            )
        if fn.is_jit and self.in_kernel:
            raise UserError(
                "err_nested_kernel_call",
                f"'{fn.name}' is an @nki.jit kernel and cannot be called from a kernel",
                call.node,
                "remove @nki.jit from sub-kernels; decorate at the call site if it is also "
                "used standalone",
            )
        scope = Scope(fn.scope)
        self.bind_arguments(fn, args, kwargs, scope, call)
        pushed = call.node is not None and hasattr(call.node, "lineno")
        if pushed:
            self.call_stack.append(self._call_loc(call.node))
        self.frames.append(Frame(scope, fn.module, fn))
        if fn.is_lambda:
            self.lambda_depth += 1
        try:
            if fn.is_lambda:
                return self.visit(fn.node.body)
            try:
                self.exec_block(fn.node.body)
            except ReturnSignal as r:
                return r.value
            except (BreakSignal, ContinueSignal):
                raise UserError(
                    "err_unsupported_syntax", "'break'/'continue' outside a loop", fn.node
                ) from None
            return None
        finally:
            if fn.is_lambda:
                self.lambda_depth -= 1
            if pushed:
                self.call_stack.pop()
            self.frames.pop()

    def _call_loc(self, node: ast.AST) -> Loc:
        return self.loc(node, with_stack=False)

    def bind_arguments(self, fn: Function, args: list, kwargs: dict, scope: Scope, call: CallSite):
        a = fn.node.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        n_pos = len(positional)
        values: dict[str, object] = {}
        if len(args) > n_pos and a.vararg is None:
            raise UserError(
                "err_type_error",
                f"{fn.name}() takes {n_pos} positional argument{'s' if n_pos != 1 else ''} "
                f"but {len(args)} were given",
                call.node,
            )
        for name, v in zip(positional, args):
            values[name] = v
        if a.vararg is not None:
            values[a.vararg.arg] = tuple(args[n_pos:])
        extra: dict = {}
        posonly = {p.arg for p in a.posonlyargs}
        kwonly = [p.arg for p in a.kwonlyargs]
        for k, v in kwargs.items():
            if (k in positional and k not in posonly) or k in kwonly:
                if k in values:
                    raise UserError(
                        "err_type_error",
                        f"{fn.name}() got multiple values for argument '{k}'",
                        call.arg_node(name=k),
                    )
                values[k] = v
            elif a.kwarg is not None:
                extra[k] = v
            else:
                raise UserError(
                    "err_unexpected_keyword",
                    f"{fn.name}() got an unexpected keyword argument '{k}'",
                    call.arg_node(name=k),
                    self.suggest(k, positional + kwonly),
                )
        defaults = dict(zip(positional[n_pos - len(fn.defaults) :], fn.defaults))
        missing = []
        for name in positional:
            if name not in values:
                if name in defaults:
                    values[name] = defaults[name]
                else:
                    missing.append(name)
        for name in kwonly:
            if name not in values:
                if name in fn.kw_defaults:
                    values[name] = fn.kw_defaults[name]
                else:
                    missing.append(name)
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            raise UserError(
                "err_missing_argument",
                f"{fn.name}() missing {len(missing)} required argument"
                f"{'s' if len(missing) > 1 else ''}: {names}",
                call.node,
            )
        if a.kwarg is not None:
            values[a.kwarg.arg] = extra
        scope.vars.update(values)

    def instantiate(self, cls: NkiClass, args: list, kwargs: dict, call: CallSite):
        if cls.is_enum:
            if len(args) != 1 or kwargs:
                raise UserError("err_type_error", f"{cls.name}(value) takes one value", call.node)
            for m in cls.members.values():
                if m.value == args[0]:
                    return m
            raise UserError(
                "err_value_error", f"{self.to_repr(args[0])} is not a valid {cls.name}", call.node
            )
        obj = Instance(cls)
        obj._initialising = True
        try:
            init = cls.lookup("__init__")
            if isinstance(init, Function):
                self.call_function(init, [obj, *args], kwargs, call)
            else:
                self._synthesised_init(cls, obj, args, kwargs, call)
                post = cls.lookup("__post_init__")
                if isinstance(post, Function):
                    self.call_function(post, [obj], {}, call)
        finally:
            obj._initialising = False
        return obj

    def _synthesised_init(self, cls: NkiClass, obj: Instance, args, kwargs, call: CallSite):
        fields = cls.fields
        if len(args) > len(fields):
            raise UserError(
                "err_type_error",
                f"{cls.name}() takes {len(fields)} positional arguments but {len(args)} were given",
                call.node,
            )
        names = [f.name for f in fields]
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise UserError(
                    "err_unexpected_keyword",
                    f"{cls.name}() got an unexpected keyword argument '{k}'",
                    call.arg_node(name=k),
                    self.suggest(k, names),
                )
            if k in values:
                raise UserError(
                    "err_type_error", f"{cls.name}() got multiple values for '{k}'", call.node
                )
            values[k] = v
        for f in fields:
            if f.name in values:
                obj.attrs[f.name] = values[f.name]
            elif f.factory is not MISSING:
                obj.attrs[f.name] = self.call(f.factory, [], {}, call)
            elif f.default is not MISSING:
                obj.attrs[f.name] = f.default
            elif cls.is_dataclass:
                raise UserError(
                    "err_missing_argument",
                    f"{cls.name}() missing required argument '{f.name}'",
                    call.node,
                )
            else:
                obj.attrs[f.name] = None

    # -----------------------------------------------------------------------------------------
    # IR emission

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


_DUNDER = {
    ast.Add: "__add__",
    ast.Sub: "__sub__",
    ast.Mult: "__mul__",
    ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__",
    ast.Mod: "__mod__",
    ast.MatMult: "__matmul__",
}


def _arith_ok(a, b) -> bool:
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num):
        return True
    seq = (str, list, tuple)
    if isinstance(a, seq) and isinstance(b, seq):
        return type(a) is type(b)
    if isinstance(a, seq) and isinstance(b, int) and not isinstance(b, bool):
        return True
    if isinstance(b, seq) and isinstance(a, int) and not isinstance(a, bool):
        return True
    return isinstance(a, str) and isinstance(b, (tuple, int, float, str))


def _opaque_error(obj: OpaqueModule, node: ast.AST | None) -> UserError:
    if obj.found:
        return UserError(
            "err_import_error",
            f"'{obj.name}' is not available in kernels (nkic does not read installed packages)",
            node,
            "kernels can use nki, numpy dtype names, math, enum, dataclasses, functools, "
            "operator, typing and the helper modules of their project",
        )
    return UserError(
        "err_import_error",
        f"no module named '{obj.name.split('.')[0]}'",
        node,
        "helper modules are searched next to the kernel file, in its package and on sys.path",
    )


def _cell_full(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _is_error(node: ast.AST) -> UserError:
    return UserError(
        "err_unsupported_syntax",
        "'is' / 'is not' are only supported against None",
        node,
        "use == / != to compare values",
    )


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_classvar(annotation: ast.AST) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _class_names(cls: NkiClass) -> list[str]:
    names: list[str] = []
    for c in cls.mro():
        names += list(c.attrs)
    return names


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


def _source(module: SourceModule) -> str:
    return "\n".join(module.lines)


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


def _int_enum_value(v):
    """An `IntEnum` member compares as its int value (Python semantics); anything else as is."""
    return v.value if isinstance(v, EnumMember) and v.cls.int_enum else v


def _int32_overflow(what: str) -> UserError:
    return UserError(
        "err_value_error",
        f"integer overflow: {what} does not fit in a 32-bit NKI int",
        None,
        "NKI integers are 32-bit; keep compile-time arithmetic within ±2**31",
    )


def _int32_result(result, name: str, args: list):
    """A builtin's result, unless it is a new integer outside the 32-bit range (an argument
    passed through unchanged, such as a wide literal mask given to `max`, is not new)."""
    if (
        type(result) is int
        and not INT32_MIN <= result <= INT32_MAX
        and not any(type(a) is int and a == result for a in args)
    ):
        raise _int32_overflow(f"{name}(...) = {result}")
    return result
