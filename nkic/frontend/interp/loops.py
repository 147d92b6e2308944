"""Loops and symbolic values: `for`/`while`, symbolic execution of `affine_range` /
`sequential_range` bodies as one IR loop (unrolled when Python semantics require it), and the
conversions that force a symbolic value to be concrete."""

from __future__ import annotations

import ast
import dataclasses
import operator
import types

from ...ir.affine import Affine
from ...ir.core import Loc, UnrolledLoop
from .. import beta1_scopes, registers
from ..registers import Register
from ..tensors import TensorView, type_name
from ..values import (
    BoundMethod,
    BreakSignal,
    Builtin,
    ContinueSignal,
    Escaped,
    Function,
    Instance,
    IteratorValue,
    ModuleValue,
    NkiClass,
    Poison,
    PoisonError,
    RangeValue,
    RestartUnrolled,
    ReturnSignal,
    Scope,
    SymbolicAbort,
    UserError,
    is_symbolic,
    norm_int,
)
from .state import MAX_ITERATIONS, MAX_PYTHON_ITERATIONS, Attempt

_PLAIN = (int, float, bool, str, type(None))

#: comparisons `decide_compare` decides, as `d op 0` for `d = a - b`
_CMP = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}

#: pieces a plain `range` loop is split into at most (`run_symbolic`), past which it unrolls
MAX_PIECES = 8

#: plain `range` loops kept symbolic per program, past which they unroll: the scheduler's
#: cost per instruction grows with the number of loops whose DMAs rotate over the queues (a
#: clock lane each), so thousands of small loops (a 4-iteration loop in each of 47 unrolled
#: blocks of blockwise_mm_bwd) compile slower than the unrolled program
MAX_PLAIN_LOOPS = 512

#: loop iterations a kernel unrolls before its plain `range` loops are attempted as symbolic
#: loops. Below it they unroll, as the official compiler unrolls them: the timing model does not
#: yet predict a kept `range` loop exactly as its unrolled form (NKI Library attention_bwd at
#: its modernbert shape: 640.5 µs kept against 517.4 µs unrolled), so the symbolic form is the
#: fallback of kernels too large to unroll quickly, not the default
PLAIN_AFTER = 50_000


def _cell_full(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


class Loops:
    """Part of the `Specialiser`: loops, symbolic loop bodies, and making symbolic values concrete."""

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
            elif isinstance(v, IteratorValue):
                stack.extend(v.items)
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

    def visit_While(self, node: ast.While):
        if isinstance(node.test, ast.Name):
            cond = self.visit(node.test)
            if isinstance(cond, Register):
                return registers.run_while(self, node, cond)
        while self.condition(node.test):
            self._count_iteration(node)
            built = self.builder.built
            try:
                self.exec_block(node.body)
            except BreakSignal:
                self._count_emitted(node, built)
                return
            except ContinueSignal:
                pass
            self._count_emitted(node, built)
        self.exec_block(node.orelse)

    def _count_iteration(self, node: ast.AST) -> None:
        """An unrolled iteration of `node` starts: counted against the budget of all loop
        iterations, most of them compile-time Python that builds nothing."""
        self.iterations += 1
        self.site_iterations[node] = self.site_iterations.get(node, 0) + 1
        if self.iterations > MAX_PYTHON_ITERATIONS:
            self.memo.budget_spent = True
            raise _budget_spent(
                f"specialisation ran more than {MAX_PYTHON_ITERATIONS} loop iterations "
                f"({self.emitting_iterations} of them built instructions); this loop ran "
                f"{self.site_iterations[node]} of them",
                node,
                "bound the loop, or compute large compile-time tables outside the kernel "
                "and pass them in",
            )

    def _count_emitted(self, node: ast.AST, built: int) -> None:
        """An iteration of `node` ended: one that built instructions or allocations (the
        builder's count moved from `built`) is counted against the budget of the unrolled
        program's size."""
        if self.builder.built == built:
            return
        self.emitting_iterations += 1
        if self.emitting_iterations > MAX_ITERATIONS:
            self.memo.budget_spent = True
            raise _budget_spent(
                f"specialisation unrolled more than {MAX_ITERATIONS} loop iterations that "
                f"build instructions ({self.builder.built} instructions and allocations); this "
                f"loop ran {self.site_iterations.get(node, 0)} iterations",
                node,
                "use nl.affine_range or nl.sequential_range for loops whose body does not "
                "depend on the iteration at compile time, so they stay hardware loops",
            )

    def visit_For(self, node: ast.For):
        if not (self.language.rules.block_scoped_tensors and self.in_kernel):
            return self._for(node)  # no tensor scope (`beta1_scopes.block` would do nothing)
        with beta1_scopes.block(self, "for", node):
            self._for(node)

    def _for(self, node: ast.For):
        iterable = self.visit(node.iter)
        if isinstance(iterable, registers.DynRange):
            return registers.run_for(self, node, iterable)
        if (
            isinstance(iterable, RangeValue)
            and isinstance(node.target, ast.Name)
            and not self.unroll_all
            and self.in_kernel
            and self.lambda_depth == 0
            and len(iterable.as_range()) >= 2
        ):
            site = (self.module.file, node.lineno, node.col_offset)
            mode = self._symbolic_mode(iterable.kind, site)
            if mode is not None:
                rest = self.run_symbolic(node, iterable, mode, site)
                if rest is None:  # a `break` in an iteration run concretely
                    return
                if not rest:
                    self.exec_block(node.orelse)
                    return
                iterable = dataclasses.replace(iterable, start=rest.start, stop=rest.stop)
        unrolled = None
        if isinstance(iterable, RangeValue) and iterable.kind == "affine" and self.in_kernel:
            name = node.target.id if isinstance(node.target, ast.Name) else "iteration"
            unrolled = UnrolledLoop(self.loop_header(node), name)
        # a range loop's iterations (ints) are named by the instructions they build
        # (`builder.iteration`) and by the errors they raise (`loop_sites`, same order)
        named = (
            isinstance(iterable, RangeValue)
            and self.in_kernel
            and isinstance(node.target, ast.Name)
        )
        builder = self.builder
        outer = builder.iteration
        if named:
            self.loop_sites.append((self.module.file, node))
            name = node.target.id
        try:
            for item in self._items(iterable, node.iter):
                if named:
                    builder.iteration = (*outer, (name, item))
                if not self._iteration(node, item, unrolled):
                    return
        finally:
            if named:
                self.loop_sites.pop()
                builder.iteration = outer
        self.exec_block(node.orelse)

    def _iteration(self, node: ast.For, item, unrolled: UnrolledLoop | None = None) -> bool:
        """One unrolled iteration of `node` for `item`; False when the body breaks."""
        self._count_iteration(node)
        builder = self.builder
        built = builder.built
        self.assign(node.target, item)
        try:
            if unrolled is None:
                for stmt in node.body:
                    self.exec_stmt(stmt)
            else:
                with builder.unrolled_iteration(unrolled, item):
                    self.exec_block(node.body)
        except BreakSignal:
            self._count_emitted(node, built)
            return False
        except ContinueSignal:
            pass
        if builder.built != built:  # (`_count_emitted` has nothing to count otherwise)
            self._count_emitted(node, built)
        return True

    def _symbolic_mode(self, kind: str, site: tuple) -> str | None:
        """The IR loop mode a loop of `kind` at `site` is attempted as; None to unroll it.
        A plain `range` loop is attempted as a sequential loop (Python runs its iterations
        in order) once the kernel has unrolled `PLAIN_AFTER` iterations, until its attempt at
        that site fails once."""
        if site in self.memo.unroll:
            return None
        if kind in ("affine", "sequential"):
            return kind
        if (
            self.language.rules.symbolic_range
            and self.iterations >= PLAIN_AFTER
            and not self.memo.plain_off
            and self.plain_loops < MAX_PLAIN_LOOPS
        ):
            return "sequential"
        return None

    def _items(self, iterable, node: ast.AST):
        """The items a `for` loop runs over; an iterator is consumed one item per iteration,
        so that the body may also call `next()` on it."""
        if not isinstance(iterable, IteratorValue):
            yield from self.iterate(iterable, node)
            return
        while iterable.pos < len(iterable.items):
            self.touch(iterable)
            yield iterable.take(1)[0]

    def loop_header(self, node: ast.For) -> Loc:
        """The span of `for target in iterable`."""
        loc, end = self.loc(node), node.iter
        return Loc(loc.file, loc.line, loc.col, end.end_lineno, end.end_col_offset + 1, loc.stack)

    def run_symbolic(
        self, node: ast.For, rv: RangeValue, mode: str, site: tuple, pieces: int = 0
    ) -> range | None:
        """Run the body once with a symbolic induction variable inside one IR loop of `mode`.
        Returns the iterations left to unroll: an empty range when the loop is done, the
        whole range when it has to be unrolled (every effect of the attempt rolled back),
        None when an iteration run concretely left the loop with `break`.

        A plain `range` loop whose body compares the induction variable with a bound that
        some iterations meet and others do not (`if i * 128 >= n: break`, `min(128, n - i *
        128)`) is split at the iterations where the outcome changes: each piece is one loop
        (or one concrete iteration) in which the comparison has a single value."""
        scope = self.scope
        att = Attempt(scope, dict(scope.vars), [f.scope for f in self.frames])
        att.plain = plain = rv.kind not in ("affine", "sequential")
        block = self.builder.block
        start = len(block)
        iterations, emitting = self.iterations, self.emitting_iterations
        self.attempts.append(att)
        try:
            with self.builder.loop(rv.start, rv.stop, rv.step, mode, self.loop_header(node)) as iv:
                block[start].python = plain
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
            if plain:  # iterations of loops unrolled inside the attempt are run again
                self.iterations, self.emitting_iterations = iterations, emitting
            if abort.target is not att:
                raise
            if abort.split and pieces + len(abort.split) <= MAX_PIECES:
                return self._run_pieces(node, rv, mode, site, abort.split, pieces)
            if plain:  # a plain loop is attempted once per site: most of them fail
                self.memo.unroll.add(site)
            return rv.as_range()
        self.attempts.pop()
        if not block[-1].body:
            del block[-1]
        for d in att.diags:
            self._emit_diag(d)
        last = rv.as_range()[-1]
        self.loop_keys[att.var] = site
        if plain:
            self.memo.plain.add(site)
            self.plain_loops += 1
        for name in att.written:
            if name in scope.vars:
                scope.vars[name] = self._after_loop(
                    scope.vars[name], att, last, name, site, rv.kind == "affine"
                )
        for outer in self.attempts:
            outer.tensors |= att.tensors
        return range(0)

    def _run_pieces(
        self, node: ast.For, rv: RangeValue, mode: str, site: tuple, split: list, pieces: int
    ) -> range | None:
        """The iterations of `rv` run as consecutive pieces that start at the values `split`:
        a loop each, one concrete iteration for a piece of one."""
        its = rv.as_range()
        starts = [its.index(v) for v in split]
        for lo, hi in zip([0, *starts], [*starts, len(its)]):
            part = its[lo:hi]
            if len(part) == 1:
                if not self._iteration(node, part[0]):
                    return None
                continue
            piece = dataclasses.replace(rv, start=part.start, stop=part.stop)
            rest = self.run_symbolic(node, piece, mode, site, pieces + len(split))
            if rest is None:
                return None
            if rest:  # unroll this piece's iterations and those after it
                return range(rest.start, rv.stop, rv.step)
        return range(0)

    def decide_compare(self, op: ast.cmpop, a, b):
        """`a op b` where one side is symbolic in the variable of a plain `range` loop being
        attempted: its value when every iteration gives the same one; else the attempt is
        split where the value changes. None when nothing can be decided (the caller makes
        the operands concrete, which unrolls the loop)."""
        if not all(isinstance(x, (int, Affine)) and not isinstance(x, bool) for x in (a, b)):
            return None
        d = Affine.of(a) - Affine.of(b)
        if len(d.vars) != 1:
            return None
        (var,) = d.vars
        att = next((x for x in self.attempts if x.var == var), None)
        if att is None or not att.plain:
            return None
        cmp = _CMP.get(type(op))
        if cmp is None:
            return None
        its, c, k = att.iterations, d.coeff(var), d.const
        outcomes = [cmp(c * i + k, 0) for i in (its[0], its[-1])]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            root, rem = divmod(-k, c)
            if rem or root not in its:
                return outcomes[0]
            at = its.index(root)
            split = [its[j] for j in (at, at + 1) if 0 < j < len(its)]
        else:  # monotonic in the iteration: one change at most
            if outcomes[0] == outcomes[1]:
                return outcomes[0]
            lo, hi = 0, len(its) - 1  # outcome(lo) is the first one, outcome(hi) the other
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if cmp(c * its[mid] + k, 0) == outcomes[0]:
                    lo = mid
                else:
                    hi = mid
            split = [its[hi]]
        abort = SymbolicAbort(att, "a comparison on the loop variable changes between iterations")
        abort.split = split
        raise abort

    def check_yield(self) -> None:
        """Before a `yield`: Python yields once per iteration, so a symbolic loop body that
        yields to a generator started outside it is unrolled."""
        if len(self.attempts) > self.generator_attempts[-1]:
            raise SymbolicAbort(self.attempts[-1], "the loop body yields")

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
            values = value.as_range()
            if len(values) > MAX_PYTHON_ITERATIONS:
                raise _budget_spent(
                    f"iterating over {len(values)} values at specialisation exceeds the limit of "
                    f"{MAX_PYTHON_ITERATIONS}",
                    node,
                    "use nl.affine_range or nl.sequential_range for loops the hardware runs",
                )
            return list(values)
        if isinstance(value, (list, tuple, str)):
            return list(value)
        if isinstance(value, IteratorValue):
            if value.pos < len(value.items):
                self.touch(value)  # consuming it is a mutation
            return value.take()
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


def _budget_spent(message: str, node: ast.AST | None, hint: str) -> UserError:
    """The loop-iteration budget is spent: every later loop would fail too, and values cut short
    would only cause follow-on errors, so the kernel's specialisation ends here."""
    err = UserError("err_specialisation_limit", message, node, hint)
    err.ends_kernel = True
    return err
