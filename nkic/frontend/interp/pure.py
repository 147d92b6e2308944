"""Calls of pure helper functions answered from a cache.

Kernel libraries call small helpers of compile-time Python many thousands of times with the
same arguments: the strides of a shape, an argument check. A function qualifies when its body
can only compute from its arguments: statements and expressions from a short list, no name but
its parameters, its locals and a few builtins (`len`, `range`, `tuple`, ...), no call but of
those builtins and of `append` on a local list, so no global state, no object of the caller, no
NKI API. A call qualifies when no symbolic loop is being attempted and its arguments are ints,
bools, strings, None and tuples of them (no floats: `0.0 == -0.0` would share an entry that
`str()` tells apart). Its first run is recorded and reused only if it built nothing, reported
nothing and changed no loop decision; a reuse adds the loop iterations the run counted, so the
budgets and every decision made on the count are those of running it again."""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: the builtins a pure function may call or name
BUILTINS = frozenset(
    {"len", "range", "tuple", "list", "min", "max", "abs", "reversed", "enumerate", "zip", "sum"}
)

#: entries kept per function, past which its new argument tuples run uncached
MAX_ENTRIES = 4096

_STMTS = (
    ast.Assign,
    ast.AugAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Return,
    ast.Expr,
    ast.Assert,
    ast.Pass,
    ast.Break,
    ast.Continue,
)
_EXPRS = (
    ast.Constant,
    ast.Name,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.List,
    ast.Call,
    ast.Attribute,
    ast.JoinedStr,
    ast.FormattedValue,
)
_OTHER = (ast.operator, ast.cmpop, ast.boolop, ast.unaryop, ast.expr_context)


@dataclass(frozen=True)
class PureFunction:
    """What a call needs to know of a qualifying function: the builtins it names (they must
    still be the builtins where it is called) and its loops (whose iteration counts a reuse
    adds)."""

    builtins: tuple[str, ...]
    loops: tuple[ast.AST, ...]


def analyse(node: ast.AST) -> PureFunction | None:
    """The function `node` as a `PureFunction`, or None if it does not qualify (cached on it)."""
    cached = node.__dict__.get("_nkic_pure", False)
    if cached is not False:
        return cached
    result = _analyse(node)
    node._nkic_pure = result
    return result


def _analyse(node: ast.AST) -> PureFunction | None:
    if not isinstance(node, ast.FunctionDef):
        return None
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return None
    params = {p.arg for p in a.args}
    local: set[str] = set()
    for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            local.add(sub.id)
    names: set[str] = set()
    loops: list[ast.AST] = []
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.For, ast.While)):
                loops.append(sub)
            if not _allowed(sub, local):
                return None
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id not in params and sub.id not in local:
                    if sub.id not in BUILTINS:
                        return None
                    names.add(sub.id)
    return PureFunction(tuple(sorted(names)), tuple(loops))


def _allowed(sub: ast.AST, local: set[str]) -> bool:
    if isinstance(sub, _STMTS):
        if isinstance(sub, ast.Expr):  # a docstring or `lst.append(x)`
            return isinstance(sub.value, (ast.Constant, ast.Call))
        if isinstance(sub, ast.AugAssign):
            return isinstance(sub.target, ast.Name)
        if isinstance(sub, ast.Assign):
            return all(_target(t) for t in sub.targets)
        if isinstance(sub, ast.For):
            return _target(sub.target) and not isinstance(sub.target, ast.Subscript)
        return True
    if isinstance(sub, ast.Call):
        if sub.keywords or any(isinstance(x, ast.Starred) for x in sub.args):
            return False
        f = sub.func
        if isinstance(f, ast.Name):
            return True  # a builtin of BUILTINS, checked with the names
        return (
            isinstance(f, ast.Attribute)
            and f.attr == "append"
            and isinstance(f.value, ast.Name)
            and f.value.id in local
        )
    if isinstance(sub, ast.Attribute):
        return sub.attr == "append"  # only as the callee above: no other use is walked to
    return isinstance(sub, _EXPRS + _OTHER)


def _target(t: ast.AST) -> bool:
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(isinstance(x, ast.Name) for x in t.elts)
    return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)


_KEY_TYPES = (int, bool, str, type(None))


def key(args: list) -> tuple | None:
    """The cache key of positional arguments (each value with its type: True is not 1), or
    None if one is not an int, bool, string, None or a tuple of them."""
    out = []
    for v in args:
        t = type(v)
        if t in _KEY_TYPES:  # `_key`'s first case, without its call
            out.append((t, v))
            continue
        k = _key(v, 0)
        if k is None:
            return None
        out.append(k)
    return tuple(out)


def _key(v, depth: int):
    t = type(v)
    if t in _KEY_TYPES:
        return (t, v)
    if t is tuple and depth < 8:
        items = []
        for x in v:
            k = _key(x, depth + 1)
            if k is None:
                return None
            items.append(k)
        return (tuple, tuple(items))
    return None


def frozen(v, depth: int = 0) -> bool:
    """Whether a result can be handed to later calls: immutable all the way down."""
    t = type(v)
    if t in _KEY_TYPES or t is float:
        return True
    return t is tuple and depth < 8 and all(frozen(x, depth + 1) for x in v)


def fresh(v):
    """A result as a new object, as each Python call returns one."""
    return tuple([fresh(x) for x in v]) if type(v) is tuple else v
