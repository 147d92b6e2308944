"""`nkic check` on a kernel that cannot be specialised because parameters have no shapes:
the shape-independent checks over the kernel and every helper function it reaches, and one
`nkic_shapes_unknown` note saying what was skipped.

The checks reuse the specialiser: it evaluates the kernel's module (imports, helper modules,
module-level code), its subset scan (`precheck`), the kernel signature rules, attribute lookup
on modules (unknown / unsupported / removed `nl` and `nisa` APIs, with suggestions) and the
keyword hints of `nisa` calls. Only name resolution is static: a name bound anywhere in a
function is taken as defined there, so no check depends on a value the kernel computes.
"""

from __future__ import annotations

import ast
import os

from ..diagnostics import Diagnostic, DiagnosticSink
from . import languages, pylib
from .entry import KernelCall, _find_def
from .loader import Loader, def_loc
from .specialiser import Frame, Specialiser
from .values import (
    Builtin,
    Deferred,
    Function,
    IsaInstr,
    ModuleValue,
    NlOp,
    Poison,
    Scope,
    UserError,
)

#: What `nkic check` does not run on a kernel it cannot specialise.
SKIPPED = (
    "specialisation (shapes, dtypes, indexing, nl lowerings, values computed from shapes) and "
    "the checks on its IR (operand, memory and partition rules, bounds, races, dataflow, "
    "allocation)"
)


def lint_kernel(path: str, kernel: str, args: dict, target: str, sink, *, language=None) -> bool:
    """If some parameter of `kernel` has no value (no `args` entry, default or `nki.typing`
    annotation), report the shape-independent checks and the note into `sink` and return
    True; otherwise report nothing and return False (the kernel can be specialised).
    `language` is the NKI version, as for `specialise`."""
    file = os.path.abspath(path)
    loader = Loader(file)
    parsed = loader.parse(file)
    if isinstance(parsed, UserError) or _find_def(parsed[0], kernel) is None:
        return False
    run_sink = DiagnosticSink()
    sp = Specialiser(
        loader, run_sink, target, kernel, language=languages.for_file(parsed[0], language)
    )
    try:
        fn, unknown = _kernel_and_unknown_parameters(sp, loader, file, kernel, args)
        if not unknown:
            return False
        _Linter(sp).run(fn)
    except Exception:  # a bug in the linter: the normal path reports what it can
        return False
    names = ", ".join(f"'{p}'" for p in unknown)
    example = unknown[0]
    run_sink.report(
        Diagnostic(
            "nkic_shapes_unknown",
            f"kernel '{kernel}' was not specialised: {names} "
            f"{'have' if len(unknown) > 1 else 'has'} no shape or value; only the shape-independent "
            f"checks ran (skipped: {SKIPPED})",
            def_loc(fn.node, fn.module.file),
            "note",
            f"pass --arg {example}=float32[128,512] (a tensor spec, or a literal for a "
            f"compile-time value), or annotate it: {example}: nt.tensor[128, 512]",
        )
    )
    for d in run_sink.items:
        sink.report(d)
    return True


def _kernel_and_unknown_parameters(sp, loader, file: str, kernel: str, args: dict):
    """The kernel's Function (its module evaluated) and its parameters without a value; the
    kernel signature rules are reported when some are missing."""
    module = sp.load_source_module(loader.kernel_module_name or "__nkic_kernel__", file, None)
    fn = module.attrs.get(kernel)
    if not isinstance(fn, Function):
        return None, []
    call = KernelCall(sp, fn)
    sp.frames.append(Frame(Scope(fn.scope), fn.module, fn, is_kernel=True))
    try:
        unknown = call.unknown_parameters(args)
        if unknown:
            call.check_signature(fn.node.args)
    finally:
        sp.frames.pop()
    return fn, unknown


class _Linter:
    """Checks a function's body without running it, then the functions it calls."""

    def __init__(self, sp: Specialiser):
        self.sp = sp
        self.done: set[int] = set()  # ids of checked functions and attribute nodes

    def run(self, kernel: Function) -> None:
        queue = [kernel]
        while queue:
            fn = queue.pop(0)
            if id(fn.node) in self.done:
                continue
            self.done.add(id(fn.node))
            self.sp.frames.append(Frame(Scope(fn.scope), fn.module, fn))
            try:
                self.sp.precheck(fn)
                queue += self.check_scope(fn, fn.node, frozenset())
            finally:
                self.sp.frames.pop()

    def report(self, err: UserError) -> None:
        self.sp.report(err)

    # names ------------------------------------------------------------------------------------

    def check_scope(self, fn: Function, node: ast.AST, outer: frozenset) -> list[Function]:
        """Check one function (or lambda) body; nested ones see its names. Returns the user
        functions it calls."""
        visible = outer | _bound_names(node)
        calls: list[Function] = []
        for child in _own_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for d in (*child.args.defaults, *child.args.kw_defaults):
                    if d is not None:
                        calls += self.check_expr(fn, d, visible)
                calls += self.check_scope(fn, child, visible)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                calls += _functions(self.resolve(fn, child, visible))
                if child.id not in visible and self.global_value(fn, child.id) is _UNBOUND:
                    self.report(
                        UserError(
                            "err_undefined_name",
                            f"name '{child.id}' is not defined",
                            child,
                            self.sp.suggest(child.id, self.visible_names(fn, visible)),
                        )
                    )
            elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load):
                calls += _functions(self.resolve(fn, child, visible))
            elif isinstance(child, ast.Call):
                calls += self.check_call(fn, child, visible)
        return calls

    def check_expr(self, fn, node, visible) -> list[Function]:
        calls = []
        for child in ast.walk(node):
            if isinstance(child, ast.Attribute):
                self.resolve(fn, child, visible)
            elif isinstance(child, ast.Call):
                calls += self.check_call(fn, child, visible)
        return calls

    def global_value(self, fn: Function, name: str):
        scope = fn.scope.find(name)
        if scope is not None:
            return scope.vars[name]
        return self.sp.builtins.get(name, _UNBOUND)

    def visible_names(self, fn: Function, local: frozenset) -> list[str]:
        names = set(local) | set(self.sp.builtins)
        s = fn.scope
        while s is not None:
            names |= set(s.vars)
            s = s.parent
        return sorted(names)

    def resolve(self, fn: Function, node: ast.AST, visible: frozenset):
        """The compile-time value of a name or a module attribute chain, or None when it
        depends on the kernel's execution. Unknown module attributes are reported once."""
        if isinstance(node, ast.Name):
            if node.id in visible:
                return None
            value = self.global_value(fn, node.id)
            if isinstance(value, Deferred):  # bound by module-level code nkic could not evaluate
                self.report(value.use_error(node))
                return None
            return None if value is _UNBOUND or isinstance(value, Poison) else value
        if not isinstance(node, ast.Attribute):
            return None
        base = self.resolve(fn, node.value, visible)
        if id(node) in self.done or not isinstance(base, ModuleValue):
            return None
        self.done.add(id(node))
        try:
            value = self.sp.getattr(base, node.attr, node)
        except UserError as err:
            self.report(err)
            return None
        return None if isinstance(value, Poison) else value

    # calls ------------------------------------------------------------------------------------

    def check_call(self, fn: Function, node: ast.Call, visible: frozenset) -> list[Function]:
        target = self.resolve(fn, node.func, visible)
        keywords = [k for k in node.keywords if k.arg is not None]
        if any(k.arg is None for k in node.keywords):
            keywords = []  # `**kw`: the names are not known
        if isinstance(target, (IsaInstr, Builtin, NlOp)):  # a dialect's own keywords (mask=)
            keywords = [k for k in keywords if k.arg not in self.sp.language.call_keywords]
        if isinstance(target, IsaInstr):
            names = self.sp.language.isa_keywords(target.name)
            self.unexpected(f"nisa.{target.name}", keywords, names, self.sp.language.keyword_hint)
        elif isinstance(target, (Builtin, NlOp)):
            if isinstance(target, NlOp):
                lower = self.sp.language.lowerings.get(target.name)
                target = None if lower is None else Builtin(f"nl.{target.name}", lower)
            if target is not None:
                params = pylib._signature(target.fn).parameters.values()
                if all(p.kind != p.VAR_KEYWORD for p in params):
                    names = [p.name for p in params]
                    self.unexpected(target.name, keywords, names, self._suggest)
        elif isinstance(target, Function):
            if target.is_jit:
                try:
                    self.sp.nested_kernel_call(target, node)
                except UserError as err:
                    self.report(err)
            a = target.node.args
            if a.kwarg is None:
                names = [p.arg for p in (*a.args, *a.kwonlyargs)]
                self.unexpected(target.name, keywords, names, self._suggest)
            return [target]
        return []

    def _suggest(self, k: str, names: list[str]) -> str | None:
        return self.sp.suggest(k, names)

    def unexpected(self, what: str, keywords, names: list[str], hint) -> None:
        for k in keywords:
            if k.arg not in names:
                self.report(
                    UserError(
                        "err_unexpected_keyword",
                        f"{what}() got an unexpected keyword argument '{k.arg}'",
                        k,
                        hint(k.arg, names),
                    )
                )


_UNBOUND = object()


def _functions(value) -> list[Function]:
    """A user function referenced by name (called, or passed on as a value) is reached."""
    return [value] if isinstance(value, Function) else []


def _own_nodes(node: ast.AST):
    """The nodes of a function body (its parameters' defaults excluded), not descending into
    nested functions and lambdas (yielded themselves)."""
    body = node.body if isinstance(node.body, list) else [node.body]
    stack = list(reversed(body))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(reversed(n.decorator_list) if hasattr(n, "decorator_list") else ())
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _bound_names(node: ast.AST) -> frozenset:
    """Every name a function binds anywhere in its own body: parameters, assignment, loop,
    with, comprehension and walrus targets, imports, nested def and class names."""
    a = node.args
    names = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    names |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    for n in _own_nodes(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {(al.asname or al.name).split(".")[0] for al in n.names if al.name != "*"}
    return frozenset(names)
