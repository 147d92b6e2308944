"""Frontend entry points: find the kernels of a file, and specialise one kernel for a set of
arguments (tensor specs and compile-time values, possibly Python objects) into a Kernel."""

from __future__ import annotations

import ast
import dataclasses
import enum
import itertools
import os
import sys
import types

from ..diagnostics import Diagnostic, DiagnosticSink
from ..ir.core import Kernel, Loc
from ..standin import ApiName
from . import languages
from .args import (
    ArgExpr,
    TensorSpec,
    normalise_dtype_or_none,
    tensor_input_name,
    tensor_places,
    tensor_spec_of,
)
from .interp.state import LoopMemo
from .language import Language
from .loader import Loader, def_loc, other_kernel_forms
from .specialiser import Frame, Specialiser
from .tensors import loop_bounds
from .values import (
    POISON,
    Deferred,
    EnumMember,
    FieldSpec,
    Function,
    Instance,
    KernelAbort,
    NkiClass,
    PoisonError,
    RestartUnrolled,
    ReturnSignal,
    Scope,
    TensorTypeAnnotation,
    UserError,
)


def find_kernels(path: str, *, language: Language | str | None = None) -> list[tuple[str, Loc]]:
    """Every `@nki.jit` top-level function of the file (empty if it cannot be parsed)."""
    file = os.path.abspath(path)
    parsed = Loader(file).parse(file)
    if isinstance(parsed, UserError):
        return []
    return languages.for_file(parsed[0], language).kernels_in(parsed[0], file)


def file_language(path: str, language: Language | str | None = None) -> Language:
    """The language of the file at `path`: `language` when given, else by its imports."""
    file = os.path.abspath(path)
    parsed = Loader(file).parse(file)
    tree = parsed[0] if not isinstance(parsed, UserError) else None
    return languages.for_file(tree, language) if tree is not None else languages.get(language)


def unchecked_kernels(path: str, *, language: Language | str | None = None) -> list[Diagnostic]:
    """One error per function of the file that some NKI form marks as a kernel but that is
    not a kernel of `language` (`@nki.baremetal`, `@nki_jit` from torch_neuronx, ...), so that a
    file holding a kernel nkic did not check is never reported clean."""
    file = os.path.abspath(path)
    parsed = Loader(file).parse(file)
    if isinstance(parsed, UserError):
        return []
    tree = parsed[0]
    kernels = [n for n, _ in languages.for_file(tree, language).kernels_in(tree, file)]
    return [
        Diagnostic(
            "nkic_kernel_not_checked",
            f"'{name}' is marked as a kernel by {form}, which nkic does not accept as a "
            "kernel form, so it was not checked",
            def_loc(_find_def(tree, name), file),
            "error",
            f"decorate it with @nki.jit (`import nki`), or check it as a kernel with -k {name}",
        )
        for name, form in other_kernel_forms(tree, kernels)
    ]


def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)


#: Words of unused value stack in the frame the specialiser starts from (see `specialise`).
OWN_CHUNK_WORDS = 300_000

#: `_call` in a frame too large for the current chunk of the thread's frame stack: it starts a
#: chunk of its own, of 4 MiB, where the specialiser's recursion then stays (Python 3.11+).
_call_in_own_chunk = (
    types.FunctionType(_call.__code__.replace(co_stacksize=OWN_CHUNK_WORDS), globals())
    if sys.version_info >= (3, 11)
    else _call
)


def specialise(
    path: str,
    kernel: str | None,
    args: dict[str, object],
    target: str,
    sink,
    *,
    unroll_all: bool = False,
    partial: bool = False,
    language: Language | str | None = None,
    core: tuple[int, int] = (0, 1),
    grid: tuple[int, ...] = (),
    memo: LoopMemo | None = None,
) -> Kernel | None:
    """Specialise `kernel` of the file at `path` for `args`; None if errors were reported.

    `unroll_all` unrolls every loop (the reference semantics that symbolic loops must match).
    `partial` returns the IR of the statements that succeeded even when others failed, so that
    `nkic check` can run the IR checks that do not depend on the failed statements.
    `language` is the NKI version (a `Language` or its name, default: `languages.DEFAULT`).
    `core` is (physical core, LNC degree): the program of that core of the launch.
    `grid` is a Beta 1 SPMD launch grid (`kernel[2, 2]`): its programs run one after another
    on one NeuronCore, so the Kernel holds every program's instructions in grid order.
    `memo` records the loop sites that must be unrolled; the cores of an LNC launch share one,
    so that a loop whose symbolic attempt failed on one core is not attempted on the next (nor
    a core specialised after one that spent a loop budget: None, with nothing reported)."""
    # CPython (3.11+) keeps the frames of a thread in chunks of 16 KiB and frees a chunk as
    # soon as the first frame in it returns: an interpreter recursing up and down across the
    # end of a chunk maps and unmaps memory on every call there, which took up to 60 % of
    # specialising a large kernel. A frame with a large unused value stack starts a chunk of
    # its own that holds thousands of the interpreter's frames above it.
    return _call_in_own_chunk(
        _specialise,
        path,
        kernel,
        args,
        target,
        sink,
        unroll_all,
        partial,
        language,
        core,
        grid,
        memo,
    )


def _specialise(
    path, kernel, args, target, sink, unroll_all, partial, language, core, grid, memo
) -> Kernel | None:
    file = os.path.abspath(path)
    loader = Loader(file)
    parsed = loader.parse(file)
    if isinstance(parsed, UserError):
        sink.report(Diagnostic(parsed.code, parsed.message, parsed.loc, "error", parsed.hint))
        return None
    tree = parsed[0]
    lang = languages.for_file(tree, language)
    name = _choose_kernel(tree, file, kernel, sink, lang)
    if name is None:
        return None
    memo = memo if memo is not None else LoopMemo()
    if memo.budget_spent:
        # an earlier core of the launch spent a loop budget, reported there: this core runs
        # the same code on its share, and specialising it would double the time to that error
        return None
    restarts = 0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        while True:
            run_sink = DiagnosticSink()
            known = frozenset(memo.unroll)
            sp = Specialiser(loader, run_sink, target, name, unroll_all, memo, language=lang)
            sp.kernel.core, sp.kernel.cores = core
            sp.grid = tuple(grid)
            bounds = loop_bounds.set(sp.affine_bounds)
            try:
                _run(sp, loader, tree, file, name, args)
                break
            except RestartUnrolled as restart:
                # a value from a symbolic loop has no single value after it: unroll that loop
                # (memo.unroll may have grown since this run started: attempts that failed)
                restarts += 1
                if restart.loop in known or restarts > MAX_RESTARTS:
                    _internal_error(run_sink, tree, file, name, "restart loop")
                    break
                memo.restart(restart.loop)
            finally:
                loop_bounds.reset(bounds)
    finally:
        sys.setrecursionlimit(limit)
    sp.kernel.body[:0] = sp.constants
    sys.stderr.write("".join(sp.output))
    for d in run_sink.items:
        sink.report(d)
    if run_sink.has_errors and not (partial and sp.kernel is not None):
        return None
    return sp.kernel


MAX_RESTARTS = 64


def _run(sp: Specialiser, loader: Loader, tree: ast.Module, file: str, name: str, args: dict):
    try:
        module = sp.load_source_module(loader.kernel_module_name or "__nkic_kernel__", file, None)
        fn = module.attrs.get(name)
        fn = sp.wrapped_kernels.get(_find_def(tree, name), fn)
        if isinstance(fn, Deferred):  # the kernel's own definition failed: say why
            sp.report(fn.error)
        elif isinstance(fn, Function):
            KernelCall(sp, fn).run(dict(args))
        elif fn is not POISON:  # POISON: its definition already failed with a diagnostic
            sp.sink.report(
                Diagnostic(
                    "err_unsupported_syntax",
                    f"'{name}' is not a plain function after its decorators",
                    def_loc(_find_def(tree, name), file),
                    "error",
                    "decorate kernels with @nki.jit only",
                )
            )
    except RestartUnrolled:
        raise
    except Exception as exc:  # a bug in nkic must still surface as a diagnostic
        _internal_error(sp.sink, tree, file, name, f"{type(exc).__name__}: {exc}")


def _internal_error(sink, tree: ast.Module, file: str, name: str, what: str) -> None:
    node = _find_def(tree, name)
    sink.report(
        Diagnostic(
            "nkic_internal_error",
            f"internal error in the nkic frontend: {what}",
            def_loc(node, file) if node else Loc(file, 1, 1, 1, 1),
            "error",
            "this is a bug in nkic; please report it with the kernel",
        )
    )


def _find_def(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _choose_kernel(
    tree: ast.Module, file: str, kernel: str | None, sink, language: Language
) -> str | None:
    found = language.kernels_in(tree, file)
    names = [n for n, _ in found]
    whole = Loc(file, 1, 1, 1, 1)
    if kernel is None:
        if len(found) == 1:
            return names[0]
        if not found:
            sink.report(
                Diagnostic(
                    "err_kernel_not_found",
                    "no @nki.jit kernel in this file",
                    whole,
                    "error",
                    "decorate the kernel function with @nki.jit, or name it with -k",
                )
            )
        else:
            sink.report(
                Diagnostic(
                    "err_kernel_not_found",
                    f"the file has {len(found)} kernels: {', '.join(names)}",
                    whole,
                    "error",
                    "choose one with -k NAME",
                )
            )
        return None
    if _find_def(tree, kernel) is None:
        defs = [s.name for s in tree.body if isinstance(s, ast.FunctionDef)]
        import difflib

        close = difflib.get_close_matches(kernel, defs, n=1)
        sink.report(
            Diagnostic(
                "err_kernel_not_found",
                f"no kernel named '{kernel}' in this file"
                + (f" (kernels: {', '.join(names)})" if names else ""),
                whole,
                "error",
                f"did you mean '{close[0]}'?" if close else None,
            )
        )
        return None
    return kernel


class KernelCall:
    """Binds the kernel's parameters (tensor specs become HBM inputs) and runs its body."""

    def __init__(self, sp: Specialiser, fn: Function):
        self.sp = sp
        self.fn = fn

    def run(self, args: dict) -> None:
        """Run the kernel once, or once per program of a Beta 1 SPMD grid (row-major order).
        A grid's programs share the parameters and the `shared_hbm` tensors they allocate; a
        diagnostic not every program makes names the programs that make it."""
        sp = self.sp
        if not sp.grid:
            self._run_program(args)
            return
        if sp.language.version != "beta1":
            err = UserError(
                "nkic_lnc_degree",
                f"an SPMD grid {list(sp.grid)} belongs to NKI Beta 1 kernels; current NKI "
                "launches kernel[1] or kernel[2] (the LNC degree)",
                None,
                "launch with --lnc 1|2, or write the kernel in Beta 1 (neuronxcc.nki)",
            )
            err.loc = def_loc(self.fn.node, self.fn.module.file)
            sp.report(err)
            return
        from ..lnc import merge

        sink, keys = sp.sink, sp.reported_keys
        labelled = []
        for program in itertools.product(*(range(n) for n in sp.grid)):
            sp.program = program
            sp.sink, sp.reported_keys = DiagnosticSink(), set()
            sp.shared_seen = {}
            try:
                self._run_program(args)
            finally:
                labelled.append((f"grid program {program}", sp.sink.items))
                sp.sink, sp.reported_keys = sink, keys
        for d in merge(labelled):
            sink.report(d)

    def _run_program(self, args: dict) -> None:
        sp, fn = self.sp, self.fn
        node = fn.node
        scope = Scope(fn.scope)
        sp.frames.append(Frame(scope, fn.module, fn, is_kernel=True))
        sp.in_kernel = True
        try:
            sp.precheck(fn)
            self._bind(node.args, args, scope, node)
            try:
                sp.exec_block(node.body)
            except (ReturnSignal, KernelAbort):
                pass
        finally:
            sp.in_kernel = False
            sp.frames.pop()

    def check_signature(self, a: ast.arguments) -> None:
        """Report the parameter kinds NKI 0.3.0 kernels cannot have."""
        for bad, what in (
            (a.vararg, "*args"),
            (a.kwarg, "**kwargs"),
            (a.kwonlyargs[0] if a.kwonlyargs else None, "keyword-only parameters ('*')"),
        ):
            if bad is not None:
                self.sp.report(
                    UserError(
                        "err_unsupported_syntax",
                        f"{what} in a kernel signature are not supported in NKI 0.3.0",
                        bad,
                        "use ordinary parameters; put defaulted parameters last",
                    )
                )

    def unknown_parameters(self, args: dict) -> list[str]:
        """Parameters that would get no value: not in `args`, no default, no annotation."""
        a = self.fn.node.args
        params = [*a.posonlyargs, *a.args]
        defaulted = {p.arg for p in params[len(params) - len(a.defaults) :]}
        return [
            p.arg
            for p in params
            if p.arg not in args and p.arg not in defaulted and self._annotation(p) is None
        ]

    def _bind(self, a: ast.arguments, args: dict, scope: Scope, node: ast.FunctionDef) -> None:
        sp = self.sp
        self.check_signature(a)
        params = [*a.posonlyargs, *a.args]
        defaults = dict(
            zip([p.arg for p in params][len(params) - len(a.defaults) :], self.fn.defaults)
        )
        for name in args:
            if name not in [p.arg for p in params]:
                err = UserError(
                    "err_unexpected_keyword",
                    f"kernel '{self.fn.name}' has no parameter '{name}'",
                    node,
                    sp.suggest(name, [p.arg for p in params]),
                )
                err.loc = def_loc(node, self.fn.module.file)
                sp.report(err)
        for p in params:
            try:
                scope.vars[p.arg] = self._argument(p, args, defaults)
            except UserError as err:
                sp.report(sp.error_node(err, p))
                scope.vars[p.arg] = POISON
            except PoisonError:
                scope.vars[p.arg] = POISON

    def _argument(self, p: ast.arg, args: dict, defaults: dict):
        sp = self.sp
        annotation = self._annotation(p)
        if p.arg in args and isinstance(args[p.arg], ArgExpr):
            value = self._evaluate(args[p.arg], p)
            if isinstance(value, list) and not self._lists_allowed():
                raise self._no_lists(p)
        elif p.arg in args:
            value = self.from_python(args[p.arg], p, top=not self._lists_allowed())
        elif p.arg in defaults:
            value = defaults[p.arg]
        elif annotation is not None:
            value = TensorSpec(annotation.shape, annotation.dtype or "float32")
        else:
            raise UserError(
                "err_missing_argument",
                f"kernel argument '{p.arg}' has no value",
                p,
                f"pass --arg {p.arg}=dtype[d0,d1,...] (or a literal), or annotate it with "
                f"nt.tensor[...]",
            )
        if isinstance(value, TensorSpec):
            if annotation is not None and annotation.shape != value.shape:
                raise UserError(
                    "err_annotation_shape_mismatch",
                    f"argument '{p.arg}' has shape {value.shape} but is annotated "
                    f"nt.tensor{list(annotation.shape)}",
                    p,
                )
            return sp.add_param(p.arg, value, p)
        return self._inputs_within(value, (p.arg,), p)

    def _lists_allowed(self) -> bool:
        """The 0.3-0.6 frontend has no list-typed kernel arguments; 0.7 runs kernels as
        ordinary Python and takes lists (of tensors, say) like any other value."""
        return self.sp.language.version not in ("beta1", "0.3", "0.4", "0.5", "0.6")

    def _no_lists(self, node: ast.AST) -> UserError:
        version = self.sp.language.version
        return UserError(
            "err_unsupported_syntax",
            f"list-typed kernel arguments are not supported in NKI {version}",
            node,
            "pass a tuple instead (NKI 0.7 takes lists)",
        )

    def _new_input(self, path: tuple, spec: TensorSpec, node: ast.AST):
        """A kernel input for a tensor inside a structured argument, named by its place."""
        name = tensor_input_name(path)
        params = {q.arg for q in (*self.fn.node.args.posonlyargs, *self.fn.node.args.args)}
        taken = self.__dict__.setdefault("_input_places", {})
        if taken.setdefault(name, path) != path or (len(path) > 1 and name in params):
            raise UserError(
                "err_invalid_argument",
                f"the tensor at {name!r} in argument '{path[0]}' would be named like "
                "another kernel input",
                node,
                "rename the kernel parameter, or pass that tensor some other way",
            )
        return self.sp.add_param(name, spec, node)

    def _inputs_within(self, value, path: tuple, node: ast.AST):
        """`value` with each tensor spec inside a list, tuple, dict or object made a kernel
        input named by its place (`tensor_input_name`)."""
        if isinstance(value, TensorSpec):
            return self._new_input(path, value, node)
        if isinstance(value, (list, tuple)):
            out = [self._inputs_within(x, (*path, i), node) for i, x in enumerate(value)]
            return out if isinstance(value, list) else tuple(out)
        if isinstance(value, dict):
            return {k: self._inputs_within(x, (*path, k), node) for k, x in value.items()}
        if isinstance(value, Instance):
            for k, x in list(value.attrs.items()):
                value.attrs[k] = self._inputs_within(x, (*path, k), node)
        return value

    def _evaluate(self, expr: ArgExpr, p: ast.arg):
        """An argument expression, evaluated by the interpreter as host code in the kernel
        module's namespace. Its tensor specs become kernel inputs named by their place; its
        nodes carry the parameter's location, so errors point at the parameter."""
        sp = self.sp
        tree = expr.tree()
        scope = Scope(self.fn.scope)
        specs: list[tuple[ast.Subscript, tuple]] = []
        tensor_places(tree.body, (p.arg,), specs)
        for i, (node, path) in enumerate(specs):
            scope.vars[f"__nkic_tensor_{i}"] = self._new_input(path, tensor_spec_of(node), p)
        for n in ast.walk(tree):  # a bare dtype name means the nl dtype (as in tensor specs)
            if isinstance(n, ast.Name) and normalise_dtype_or_none(n.id) == n.id:
                scope.vars[n.id] = self._api_value(f"nki.language.{n.id}", p)
        body = _TensorNames({id(n): i for i, (n, _) in enumerate(specs)}).visit(tree.body)
        for n in ast.walk(body):
            if isinstance(n, (ast.expr, ast.keyword)):
                ast.copy_location(n, p)
        saved = sp.in_kernel
        sp.frames.append(Frame(scope, self.fn.module, None))
        sp.in_kernel = False
        try:
            value = sp.visit(body)
        except UserError as err:
            err.message = f"argument '{p.arg}': {err.message}"
            if err.code == "err_undefined_name" and isinstance(tree.body, ast.Name):
                err.hint = (
                    f"a string argument needs quotes: --arg {p.arg}=\"'{tree.body.id}'\"; a "
                    "bare name means a name of the kernel's module"
                )
            raise
        finally:
            sp.frames.pop()
            sp.in_kernel = saved
        return value

    def _annotation(self, p: ast.arg) -> TensorTypeAnnotation | None:
        if p.annotation is None:
            return None
        sp = self.sp
        saved = sp.in_kernel
        try:
            value = sp.visit(p.annotation)
        except (UserError, PoisonError):
            return None
        finally:
            sp.in_kernel = saved
        return value if isinstance(value, TensorTypeAnnotation) else None

    # Python objects -> NKI values --------------------------------------------------------------

    def from_python(self, v, node: ast.AST, top: bool = True):
        """The NKI value of a Python argument (lists only inside objects, as NKI 0.3.0 has
        no list-typed kernel arguments)."""
        import numpy as np

        if isinstance(v, TensorSpec):
            return v
        if isinstance(v, ApiName):
            return self._api_value(v.path, node)
        if isinstance(v, np.ndarray):
            dtype = normalise_dtype_or_none(v.dtype)
            if dtype is None:
                raise UserError("err_invalid_argument", f"unsupported array dtype {v.dtype}", node)
            return TensorSpec(v.shape, dtype)
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, tuple):
            return tuple(self.from_python(x, node, top) for x in v)
        if isinstance(v, list) and not top:
            return [self.from_python(x, node, False) for x in v]
        if isinstance(v, list):
            raise self._no_lists(node)
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise UserError("err_type_error", "dict kernel arguments need string keys", node)
            return {k: self.from_python(x, node, False) for k, x in v.items()}
        dtype = _dtype_name(v)
        if dtype is not None:
            return dtype
        if isinstance(v, enum.Enum):
            cls = self.nki_class(type(v))
            return cls.members[v.name]
        if callable(v) and hasattr(v, "__code__"):
            found = self._lookup_python(v)
            if isinstance(found, Function):
                return found
            raise UserError(
                "err_invalid_argument",
                f"function '{v.__name__}' passed as a kernel argument was not found in a "
                "source file nkic can read",
                node,
            )
        if hasattr(v, "__dict__") and not isinstance(v, type):
            cls = self.nki_class(type(v))
            obj = Instance(cls)
            for k, x in vars(v).items():
                obj.attrs[k] = self.from_python(x, node, False)
            return obj
        raise UserError(
            "err_invalid_argument",
            f"a {type(v).__name__} cannot be passed as a kernel argument",
            node,
        )

    def _api_value(self, path: str, node: ast.AST):
        """The NKI value of an `nki.*` name taken on the Python side (`nl.bfloat16`, `nl.add`,
        `nisa.reduce_cmd.reset_reduce`) where the stand-in `nki` package is in use."""
        surfaces = self.sp.language.modules()
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            if head in surfaces:
                value = surfaces[head]
                for name in parts[cut:]:
                    value = self.sp.getattr(value, name, node)
                return value
        raise UserError(
            "err_invalid_argument", f"{path} cannot be passed as a kernel argument", node
        )

    def nki_class(self, cls: type) -> NkiClass:
        found = self._lookup_python(cls)
        if isinstance(found, NkiClass):
            return found
        nc = NkiClass(cls.__name__, (), None)
        if issubclass(cls, enum.Enum):
            nc.is_enum = True
            for m in cls:
                member = EnumMember(nc, m.name, self.from_python(m.value, None, False))
                nc.members[m.name] = member
                nc.attrs[m.name] = member
        elif dataclasses.is_dataclass(cls):
            nc.is_dataclass = True
            nc.fields = [FieldSpec(f.name) for f in dataclasses.fields(cls)]
        return nc

    def _lookup_python(self, obj) -> object:
        """The specialiser's counterpart of a Python class or function, found by evaluating the
        module it was defined in (silently: a module nkic cannot read just gives no result)."""
        sp = self.sp
        module = sys.modules.get(getattr(obj, "__module__", "") or "")
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            return None
        path = os.path.abspath(file)
        if path not in sp.module_by_file:
            # a script's `if __name__ == "__main__":` block must not run here
            name = obj.__module__ if obj.__module__ != "__main__" else "__nkic_main__"
            saved = sp.sink, set(sp.reported_keys)
            sp.sink = _Discard()
            try:
                sp.load_source_module(name, path, None)
            except UserError:
                return None
            finally:
                sp.sink, sp.reported_keys = saved
        scope = sp.module_by_file[path].scope
        value: object = None
        for part in obj.__qualname__.split("."):
            if part == "<locals>":
                return None
            if isinstance(value, NkiClass):
                value = value.attrs.get(part)
            else:
                value = scope.vars.get(part)
        return value


class _Discard:
    """A diagnostic sink that drops everything (for modules read only to find a class)."""

    items: list = []

    def report(self, diag) -> None:
        pass


def _dtype_name(v) -> str | None:
    import numpy as np

    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return normalise_dtype_or_none(v)
    return None


class _TensorNames(ast.NodeTransformer):
    """Tensor spec nodes replaced by the names their kernel inputs are bound to."""

    def __init__(self, index: dict[int, int]):
        self.index = index

    def visit_Subscript(self, node: ast.Subscript):
        i = self.index.get(id(node))
        if i is None:
            return self.generic_visit(node)
        return ast.Name(id=f"__nkic_tensor_{i}", ctx=ast.Load())
