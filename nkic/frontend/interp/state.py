"""The interpreter's state records (call sites, frames, symbolic loop attempts), its limits, and
the helpers several parts of the interpreter share."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..values import Function, OpaqueModule, Scope, SourceModule, UserError

MAX_CALL_DEPTH = 200
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: unrolled loop iterations that build IR (instructions, allocations) per kernel (per core of an
#: LNC launch): what bounds the size of the program the backend is given
MAX_ITERATIONS = 200_000
#: loop iterations of any kind per kernel, most of them compile-time Python that builds nothing
#: (helpers that walk the dimensions of a view, build index lists, check arguments); also the
#: items of a `range` iterated over or of a sequence built at specialisation. It bounds the
#: specialisation's time: the NKI Library's moe_bwmm_mx_cte runs up to about 750,000 per core
#: at its T10240 E128 test shapes (compiled in about 47 s of CPU); a runaway loop of
#: compile-time Python meets this budget in well under a minute
MAX_PYTHON_ITERATIONS = 1_000_000


#: Errors that end the kernel like the Python exception they stand for (values.KernelAbort).
ABORT_CODES = frozenset({"err_assert_failed", "err_raised_exception"})


@dataclass(slots=True)
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


@dataclass(slots=True)
class Frame:
    """An active function call (or the module body being evaluated)."""

    scope: Scope
    module: SourceModule
    func: Function | None = None
    is_kernel: bool = False
    #: how many `if` / `else` blocks of this call are being executed
    branches: int = 0


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
    #: a plain `range` loop (Python runs it; its comparisons on the variable may split it)
    plain: bool = False


@dataclass
class LoopMemo:
    """What specialising a kernel learnt about its loop sites, (file, line, column): kept
    across restarts of its specialisation and shared by the cores of an LNC launch, so that a
    plain `range` loop whose symbolic attempt failed is never attempted again."""

    #: sites that must be unrolled: their attempt failed, or a value escaped from them
    unroll: set = field(default_factory=set)
    #: sites of plain `range` loops that were run symbolically
    plain: set = field(default_factory=set)
    #: restarts of the specialisation caused by values escaping plain `range` loops
    plain_restarts: int = 0
    #: past `MAX_PLAIN_RESTARTS` of them every plain `range` loop is unrolled
    plain_off: bool = False
    #: a core spent a loop budget (`MAX_ITERATIONS`, `MAX_PYTHON_ITERATIONS`): the launch fails,
    #: and the later cores, which run the same code on their share, are not specialised
    budget_spent: bool = False

    def restart(self, site: tuple) -> None:
        """Specialisation starts over with `site` unrolled."""
        self.unroll.add(site)
        if site in self.plain:
            self.plain_restarts += 1
            self.plain_off = self.plain_restarts >= MAX_PLAIN_RESTARTS


#: restarts caused by plain `range` loops before they are all unrolled: bounds the work spent
#: on attempts at kernels where values keep escaping them
MAX_PLAIN_RESTARTS = 4


def opaque_error(obj: OpaqueModule, node: ast.AST | None) -> UserError:
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


def is_error(node: ast.AST) -> UserError:
    return UserError(
        "err_unsupported_syntax",
        "'is' / 'is not' are only supported against None",
        node,
        "use == / != to compare values",
    )


def is_none_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def int32_overflow(what: str) -> UserError:
    return UserError(
        "err_value_error",
        f"integer overflow: {what} does not fit in a 32-bit NKI int",
        None,
        "NKI integers are 32-bit; keep compile-time arithmetic within ±2**31",
    )


def bound_names(stmt: ast.stmt) -> set[str]:
    """Every name a statement may bind in its scope (assignment and loop targets, `def` and
    `class` names, imports), including inside its blocks."""
    names: set[str] = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in sub.names if a.name != "*"}
    return names
