"""Functions and calls: `def` and `lambda`, call evaluation and dispatch, argument binding."""

from __future__ import annotations

import ast

from .. import pylib
from ..tensors import type_name
from ..values import (
    MISSING,
    BoundMethod,
    BreakSignal,
    Builtin,
    ClassMethod,
    ContinueSignal,
    Function,
    Instance,
    IsaInstr,
    IteratorValue,
    NkiClass,
    NlOp,
    OpaqueModule,
    Poison,
    PoisonError,
    PyType,
    ReturnSignal,
    Scope,
    StaticMethod,
    UserError,
)
from . import loops, pure
from .context import MARKED_VALUES, UNSUPPORTED_CONSTANTS
from .state import (
    INT32_MAX,
    INT32_MIN,
    MAX_CALL_DEPTH,
    MAX_PYTHON_ITERATIONS,
    CallSite,
    Frame,
    int32_overflow,
    opaque_error,
)

#: A name bound in no scope and not a builtin (`visit_Call` then lets `visit` report it).
_UNBOUND = object()


def _int32_result(result, name: str, args: list):
    """A builtin's result, unless it is a new integer outside the 32-bit range (an argument
    passed through unchanged, such as a wide literal mask given to `max`, is not new)."""
    if (
        type(result) is int
        and not INT32_MIN <= result <= INT32_MAX
        and not any(type(a) is int and a == result for a in args)
    ):
        raise int32_overflow(f"{name}(...) = {result}")
    return result


class Calls:
    """Part of the `Specialiser`: function definitions, calls and argument binding."""

    def visit_FunctionDef(self, node: ast.FunctionDef):
        fn = self.make_function(node.name, node)
        value: object = fn
        for dec in reversed(node.decorator_list):
            decorator = None
            if isinstance(dec, ast.Call):  # `@nki.profile(working_directory=...)`
                entry = self.visit(dec.func)
                decorator = entry if self.language.is_launch_entry_point(entry) else None
            if decorator is None:
                decorator = self.visit(dec)
            value = self.call(decorator, [value], {}, CallSite(dec))
        if fn.is_jit and value is not fn:
            self.wrapped_kernels[node] = fn  # `@user_decorator @nki.jit def k`: k is the kernel
        self.store_name(node.name, value)

    def make_function(self, name: str, node) -> Function:
        refused = self.language.rules.unsupported_syntax
        for sub in _suspensions(node):
            if isinstance(sub, ast.Await) or type(sub) in refused:
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

    def visit_Call(self, node: ast.Call):
        func = node.func
        receiver = None  # the instance of `obj.method(...)`, when found without `getattr`
        if type(func) is ast.Attribute and type(func.value) is ast.Name and not self.attempts:
            # a method of a user class called on a name (`self.get_dim()`): the method is the
            # one `getattr` would bind, called without making the bound method
            name = func.value.id
            s = self.frames[-1].scope
            while s is not None:
                found = s.vars
                if name in found:
                    obj = found[name]
                    if type(obj) is Instance and func.attr not in obj.attrs:
                        method = obj.cls.lookup(func.attr)
                        if type(method) is Function:
                            receiver = obj
                    break
                s = s.parent
        fn = self.visit(func) if receiver is None else method
        args: list = []
        arg_nodes: list = node.args  # one node per argument, unless one is starred
        for a in node.args:
            if type(a) is ast.Starred:
                if arg_nodes is node.args:
                    arg_nodes = arg_nodes[: len(args)]
                items = self.iterate(self.visit(a.value), a)
                args += items
                arg_nodes += [a] * len(items)
            else:
                kind = type(a)
                if kind is ast.Name and not self.attempts:
                    # `visit`'s fast path for a name, inline (most arguments are names)
                    name = a.id
                    s = self.frames[-1].scope
                    while s is not None:
                        if name in s.vars:
                            value = s.vars[name]
                            break
                        s = s.parent
                    else:
                        value = self.builtins.get(name, _UNBOUND)
                    if value is _UNBOUND or type(value) in MARKED_VALUES:
                        value = self.visit(a)
                elif kind is ast.Constant and type(a.value) not in UNSUPPORTED_CONSTANTS:
                    value = a.value
                else:
                    value = self.visit(a)
                args.append(value)
                if arg_nodes is not node.args:
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
                kwargs[k.arg] = self.visit(k.value)  # `visit` looks a name up inline too
                kw_nodes[k.arg] = k
        if receiver is not None:  # `call`'s case of a bound method, without the method
            return self.call_function(
                fn, [receiver, *args], kwargs, CallSite(node, arg_nodes, kw_nodes)
            )
        if type(fn) is Function:  # `call`'s first case, without its dispatch
            return self.call_function(fn, args, kwargs, CallSite(node, arg_nodes, kw_nodes))
        return self.call(fn, args, kwargs, CallSite(node, arg_nodes, kw_nodes))

    def call(self, fn, args: list, kwargs: dict, call: CallSite):
        kind = type(fn)
        if kind is Function:
            return self.call_function(fn, args, kwargs, call)
        if kind is BoundMethod:
            return self.call(fn.func, [fn.self_value, *args], kwargs, call)
        if (kind is Builtin or kind is IsaInstr or kind is NlOp) and not self.intercepts_calls:
            # the most frequent callees: the cases below for a builtin (the next) and an NKI
            # API (the last), without a dialect's hook and the cases between
            for v in args:
                if type(v) is Poison:
                    raise PoisonError()
            if kwargs:
                for v in kwargs.values():
                    if type(v) is Poison:
                        raise PoisonError()
            if kind is Builtin:
                return _int32_result(self.call_builtin(fn, args, kwargs, call), fn.name, args)
            self.check_nki_context(f"nisa.{fn.name}" if kind is IsaInstr else f"nl.{fn.name}", call)
            return self.language.call_api(self, fn, args, kwargs, call)
        if isinstance(fn, Poison):
            raise PoisonError()
        if isinstance(fn, Function):
            return self.call_function(fn, args, kwargs, call)
        if isinstance(fn, BoundMethod):
            return self.call(fn.func, [fn.self_value, *args], kwargs, call)
        if isinstance(fn, (Builtin, IsaInstr, NlOp)):
            for v in args:
                if type(v) is Poison:  # (Poison has no subclasses)
                    raise PoisonError()  # an argument failed, and was reported
            if kwargs:
                for v in kwargs.values():
                    if type(v) is Poison:
                        raise PoisonError()
            special = self.language.intercept_call(self, fn, args, kwargs, call)
            if special is not MISSING:
                return special
        if isinstance(fn, Builtin):
            return _int32_result(self.call_builtin(fn, args, kwargs, call), fn.name, args)
        if isinstance(fn, NkiClass):
            return self.instantiate(fn, args, kwargs, call)
        if isinstance(fn, Instance):
            method = fn.cls.lookup("__call__")
            if isinstance(method, Function):
                return self.call_function(method, [fn, *args], kwargs, call)
        if isinstance(fn, OpaqueModule):
            raise opaque_error(fn, call.node)
        if isinstance(fn, PyType):
            return _int32_result(pylib.call_type(self, fn, args, kwargs, call), fn.name, args)
        if isinstance(fn, (IsaInstr, NlOp)):
            self.check_nki_context(
                f"nisa.{fn.name}" if isinstance(fn, IsaInstr) else f"nl.{fn.name}", call
            )
            return self.language.call_api(self, fn, args, kwargs, call)
        if isinstance(fn, (StaticMethod, ClassMethod)):
            return self.call(fn.func, args, kwargs, call)
        special = self.language.call_value(self, fn, args, kwargs, call)
        if special is not MISSING:
            return special
        raise UserError("err_type_error", f"{type_name(fn)} is not callable", call.node)

    def call_builtin(self, fn: Builtin, args: list, kwargs: dict, call: CallSite):
        if fn.nki_api:
            self.check_nki_context(fn.name, call)
        try:
            return fn.fn(self, call, *args, **kwargs)
        except TypeError:
            # Arguments that do not bind raise before the body runs: say which, at the call.
            # A TypeError from inside a builtin whose call binds is a bug in nkic.
            bind_error = pylib.check_signature(fn, args, kwargs)
            if bind_error is None:
                raise
        code, message, kw = bind_error
        raise UserError(code, f"{fn.name}() {message}", call.arg_node(name=kw) if kw else call.node)

    def call_function(self, fn: Function, args: list, kwargs: dict, call: CallSite):
        if len(self.call_stack) >= MAX_CALL_DEPTH:
            raise UserError(
                "err_specialisation_limit",
                f"call depth exceeds {MAX_CALL_DEPTH} (unbounded recursion in '{fn.name}'?)",
                call.node,
                "make sure the recursion terminates at specialisation time",
            )
        if fn.is_jit and self.in_kernel:
            self.nested_kernel_call(fn, call.node)
        if not kwargs and not self.attempts and not fn.is_jit:
            info = pure.analyse(fn.node)
            if info is not None:
                return self._call_pure(fn, info, args, call)
        return self._call_function(fn, args, kwargs, call)

    def _call_pure(self, fn: Function, info: pure.PureFunction, args: list, call: CallSite):
        """A call of a function whose result depends only on its arguments (`pure.py`): from
        the cache when it ran with these arguments before, else run and recorded."""
        key = pure.key(args)
        if key is None:
            return self._call_function(fn, args, {}, call)
        for name in info.builtins:
            if self.lookup_builtin(fn, name) is None:
                return self._call_function(fn, args, {}, call)
        cache = self.pure_cache.get(fn)
        if cache is None:
            cache = self.pure_cache[fn] = {}
        # Whether the function's plain `range` loops may be attempted as symbolic loops (in
        # the kernel, past `PLAIN_AFTER` iterations): a run reused must have been run under the
        # same rule, and a run below the threshold is reused only if it stays below it.
        plain_after = loops.PLAIN_AFTER
        regime = (self.in_kernel, self.lambda_depth, self.iterations >= plain_after)
        hit = cache.get(key)
        if hit is not None:
            result, iterations, counts, recorded = hit
            total = self.iterations + iterations
            if (
                recorded == regime
                and total <= MAX_PYTHON_ITERATIONS
                and (regime[2] or total < plain_after)
            ):
                self.iterations = total
                sites = self.site_iterations
                for loop, n in zip(info.loops, counts):
                    if n:
                        sites[loop] = sites.get(loop, 0) + n
                return pure.fresh(result) if type(result) is tuple else result
            # run it: it spends the budget (and says where), or may now keep a loop
        sites = self.site_iterations
        before = self._pure_state()
        counts = [sites.get(loop, 0) for loop in info.loops]
        result = self._call_function(fn, args, {}, call)
        after = self._pure_state()
        if (
            after[1:] == before[1:]
            and (regime[2] or after[0] < plain_after)
            and pure.frozen(result)
            and (key in cache or len(cache) < pure.MAX_ENTRIES)
        ):
            counts = tuple(sites.get(loop, 0) - n for loop, n in zip(info.loops, counts))
            cache[key] = (result, after[0] - before[0], counts, regime)
        return result

    def _pure_state(self) -> tuple:
        """The iteration count, then what a pure function's run must leave as it was to be
        reused: nothing built, reported or printed, no loop decided differently."""
        memo = self.memo
        return (
            self.iterations,
            self.emitting_iterations,
            self.builder.built,
            len(self.builder.block),
            self.plain_loops,
            len(memo.unroll),
            len(memo.plain),
            len(self.sink.items),
            len(self.host_errors),
            len(self.output),
        )

    def lookup_builtin(self, fn: Function, name: str):
        """The builtin `name` as `fn`'s body sees it; None where a scope of `fn` rebinds it."""
        if fn.scope.find(name) is not None:
            return None
        return self.builtins.get(name)

    def _call_function(self, fn: Function, args: list, kwargs: dict, call: CallSite):
        scope = Scope(fn.scope)
        signature = self.signatures.get(fn.node.args)
        if (
            signature is not None
            and signature.plain
            and not kwargs
            and len(args) == len(signature.positional)
        ):  # `bind_arguments`' common case inline: every parameter given by position
            scope.vars.update(zip(signature.positional, args))
        else:
            self.bind_arguments(fn, args, kwargs, scope, call)
        pushed = call.node is not None and hasattr(call.node, "lineno")
        if pushed:
            self.call_stack.append(self.loc(call.node, False))
        self.frames.append(Frame(scope, fn.module, fn))
        is_lambda = fn.is_lambda
        if is_lambda:
            self.lambda_depth += 1
        try:
            if is_lambda:
                return self.visit(fn.node.body)
            if ast.Yield not in self.language.rules.unsupported_syntax and _is_generator(fn.node):
                return self._run_generator(fn)
            try:
                for stmt in fn.node.body:  # `exec_block`, without its call
                    self.exec_stmt(stmt)
            except ReturnSignal as r:
                return r.value
            except (BreakSignal, ContinueSignal):
                raise UserError(
                    "err_unsupported_syntax", "'break'/'continue' outside a loop", fn.node
                ) from None
            return None
        finally:
            if is_lambda:
                self.lambda_depth -= 1
            if pushed:
                self.call_stack.pop()
            self.frames.pop()

    def _run_generator(self, fn: Function) -> IteratorValue:
        """A generator function (NKI 0.7 runs the kernel as Python): its body runs to the end
        and the call returns an iterator over the values it yields (as a generator expression
        gives). Running the body ahead of its consumer changes nothing a kernel can see
        unless the body issues NKI instructions, which are refused rather than reordered."""
        yielded: list = []
        self.yield_buffers = [*getattr(self, "yield_buffers", []), yielded]
        self.generator_attempts = [*getattr(self, "generator_attempts", []), len(self.attempts)]
        before = len(self.builder.block)
        try:
            self.exec_block(fn.node.body)
        except ReturnSignal:
            pass
        finally:
            self.yield_buffers = self.yield_buffers[:-1]
            self.generator_attempts = self.generator_attempts[:-1]
        if len(self.builder.block) != before:
            raise UserError(
                "err_unsupported_syntax",
                f"generator '{fn.name}' issues NKI instructions: nkic runs a generator's body "
                "before its consumer, which would reorder them",
                fn.node,
                "build and return a list of the values instead, or issue the instructions in "
                "the loop that consumes the generator",
            )
        return IteratorValue("generator", yielded)

    def visit_Yield(self, node: ast.Yield):
        buffers = getattr(self, "yield_buffers", [])
        if ast.Yield in self.language.rules.unsupported_syntax or not buffers:
            raise self.unsupported(node)
        self.check_yield()
        buffers[-1].append(None if node.value is None else self.visit(node.value))

    def visit_YieldFrom(self, node: ast.YieldFrom):
        buffers = getattr(self, "yield_buffers", [])
        if ast.YieldFrom in self.language.rules.unsupported_syntax or not buffers:
            raise self.unsupported(node)
        self.check_yield()
        value = self.visit(node.value)
        buffers[-1].extend(self.iterate(value, node.value))

    def bind_arguments(self, fn: Function, args: list, kwargs: dict, scope: Scope, call: CallSite):
        a = fn.node.args
        signature = self.signatures.get(a)
        if signature is None:
            signature = self.signatures[a] = Signature(a)
        positional, posonly, kwonly = signature.positional, signature.posonly, signature.kwonly
        n_pos = len(positional)
        if not kwargs and signature.plain and len(args) == n_pos:
            # the common case: every parameter given by position
            scope.vars.update(zip(positional, args))
            return
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
                    self.suggest(k, [*positional, *kwonly]),
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


class Signature:
    """The parameter names of a `def` or `lambda`, read once per definition."""

    __slots__ = ("positional", "posonly", "kwonly", "plain")

    def __init__(self, a: ast.arguments):
        self.positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        self.posonly = {p.arg for p in a.posonlyargs}
        self.kwonly = [p.arg for p in a.kwonlyargs]
        # only positional-or-keyword parameters: a call passing them all by position binds
        # them in order, nothing else to fill in
        self.plain = a.vararg is None and a.kwarg is None and not a.kwonlyargs


def _is_generator(node: ast.AST) -> bool:
    """A function whose own body (not a nested function's) holds `yield`."""
    cached = getattr(node, "_nkic_generator", None)
    if cached is None:
        stack, cached = list(getattr(node, "body", [])), False
        while stack and not cached:
            n = stack.pop()
            if isinstance(n, (ast.Yield, ast.YieldFrom)):
                cached = True
            elif not isinstance(
                n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                stack.extend(ast.iter_child_nodes(n))
        node._nkic_generator = cached
    return cached


def _suspensions(node: ast.AST) -> list[ast.AST]:
    """The `await`, `yield` and `yield from` nodes anywhere in a definition, in `ast.walk`
    order (found once per definition: a nested `def` is made at every call of its parent)."""
    found = getattr(node, "_nkic_suspensions", None)
    if found is None:
        found = [
            sub for sub in ast.walk(node) if isinstance(sub, (ast.Await, ast.Yield, ast.YieldFrom))
        ]
        node._nkic_suspensions = found
    return found
