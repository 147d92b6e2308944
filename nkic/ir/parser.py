"""Parses the IR text form (grammar.lark) back into a Kernel."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError, VisitError

from .affine import Affine
from .core import AccessPattern, Alloc, Dynamic, DynLoop, Imm, Inst, Kernel, Loc, Loop, Tensor


class IRParseError(ValueError):
    """The text is not valid IR; the message names the line and column."""


@cache
def _lark() -> Lark:
    grammar = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(grammar, parser="lalr", maybe_placeholders=True)


@v_args(inline=True)
class _ToIR(Transformer):
    def __init__(self):
        super().__init__()
        self.files: dict[int, str] = {}
        self.values: dict[str, Tensor] = {}

    # literals
    def float(self, t):
        return float(t)

    def int(self, t):
        return int(t)

    def string(self, t):
        return json.loads(t)

    def true(self):
        return True

    def false(self):
        return False

    def none(self):
        return None

    def empty_tuple(self):
        return ()

    def tuple(self, *items):
        return tuple(items)

    # locations
    def span(self, f, l0, c0, l1, c1):
        return (int(f), int(l0), int(c0), int(l1), int(c1))

    def loc(self, main, *stack):
        def mk(s, st=()):
            return Loc(self.files[s[0]], s[1], s[2], s[3], s[4], st)

        frames = tuple(mk(s) for s in stack if s is not None)
        return mk(main, frames)

    def file(self, idx, path):
        self.files[int(idx)] = json.loads(path)
        return None

    def ttype(self, buffer, dtype, *dims):
        return (str(buffer), str(dtype), tuple(int(d) for d in dims if d is not None))

    def _tensor(self, value, ttype, label, kind, loc):
        name = str(value)[1:]
        if name in self.values:
            raise IRParseError(f"value %{name} defined twice")
        buffer, dtype, shape = ttype
        t = Tensor(
            name, buffer, dtype, shape, json.loads(label), kind, loc or Loc("<unknown>", 1, 1, 1, 1)
        )
        self.values[name] = t
        return t

    def param(self, value, ttype, label, loc):
        return ("param", self._tensor(value, ttype, label, "input", loc))

    def address(self, p, b, fixed):
        return (int(p), int(b), fixed is not None)

    def rotate(self, var, count, stride, phase):
        return (str(var)[1:], int(count), int(stride), int(phase) if phase is not None else 0)

    def alloc(self, value, ttype, label, kind, address, rotate, loc):
        t = self._tensor(value, ttype, label, str(kind) if kind else "internal", loc)
        if address is not None:
            t.address = address[:2]
            t.fixed_address = address[2]
        t.rotate = rotate
        return Alloc(t, t.loc)

    def engine(self, name):
        return str(name)

    def operand(self, name, value):
        return (str(name), value if isinstance(value, AccessPattern) else Imm(value))

    def attr(self, name, value):
        return (str(name), value)

    def inst(self, opcode, engine, *rest):
        loc = rest[-1]
        items = [r for r in rest[:-1] if r is not None]
        operands = {k: v for k, v in items if isinstance(v, (AccessPattern, Imm))}
        attrs = {k: v for k, v in items if not isinstance(v, (AccessPattern, Imm))}
        return Inst(str(opcode), operands, attrs, loc or Loc("<unknown>", 1, 1, 1, 1), engine)

    def pair(self, step, num):
        return (int(step), int(num))

    def const_term(self, n):
        return Affine(int(n))

    def scaled_term(self, n, var):
        return Affine(0, {str(var)[1:]: int(n)})

    def var_term(self, var):
        return Affine.var(str(var)[1:])

    def affine(self, first, *rest):
        out = first
        for sign, term in zip(rest[::2], rest[1::2]):
            out = out + term if str(sign) == "+" else out - term
        return out

    def ap(self, value, offset, *rest):
        t = self._value(value)
        pairs = tuple(r for r in rest[:-2])
        dtype = str(rest[-2]) if rest[-2] is not None else t.dtype
        return AccessPattern(t, offset, pairs, dtype, rest[-1])

    def dynamic(self, kind, index, dim, unit=None, extent=None):
        if str(kind) not in ("vector", "scalar", "indirect"):
            raise IRParseError(f"unknown dynamic offset kind {kind!r} (vector, scalar or indirect)")
        return Dynamic(
            str(kind),
            str(index),
            int(dim),
            None if unit is None else int(unit),
            None if extent is None else int(extent),
        )

    def loop(self, var, start, stop, step, mode, loc, *body):
        loc = loc or Loc("<unknown>", 1, 1, 1, 1)
        return Loop(str(var)[1:], int(start), int(stop), int(step), str(mode), list(body), loc)

    def _value(self, token) -> Tensor:
        """The tensor a `%name` token names, defined earlier in the text."""
        name = str(token)[1:]
        if name not in self.values:
            raise IRParseError(f"use of undefined value %{name}")
        return self.values[name]

    def counter(self, token):
        return None if str(token) == "_" else self._value(token)

    def bound(self, token):
        return self._value(token) if str(token).startswith("%") else int(token)

    def dyn_for(self, counter, start, stop, step, var, loc, *body):
        loc = loc or Loc("<unknown>", 1, 1, 1, 1)
        return DynLoop(str(var)[1:], "for", start, stop, int(step), counter, None, list(body), loc)

    def dyn_while(self, cond, var, loc, *body):
        loc = loc or Loc("<unknown>", 1, 1, 1, 1)
        cond = self._value(cond)
        return DynLoop(str(var)[1:], "while", 0, None, 1, None, cond, list(body), loc)

    def ints(self, *values):
        return tuple(int(v) for v in values if v is not None)

    def retview(self, shape, offset, strides):
        return (shape, int(offset), strides)

    def retval(self, value, view=None):
        name = str(value)[1:]
        if name not in self.values:
            raise IRParseError(f"return of undefined value %{name}")
        return (self.values[name], view)

    def ret(self, *values):
        out = [v for v in values if v is not None]
        return ("return", [t for t, _ in out], [view for _, view in out])

    def start(self, name, target, *items):
        k = Kernel(str(name), str(target))
        for it in items:
            if it is None:
                continue
            if isinstance(it, tuple) and it[0] == "param":
                k.params.append(it[1])
            elif isinstance(it, tuple) and it[0] == "return":
                k.returns = it[1]
                k.return_views = it[2] if any(it[2]) else []
            else:
                k.body.append(it)
        return k


def parse_kernel(text: str) -> Kernel:
    """Parse printed IR. Raises IRParseError with a line:column on malformed text."""
    try:
        tree = _lark().parse(text)
        return _ToIR().transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, IRParseError):
            raise e.orig_exc from None
        raise IRParseError(str(e.orig_exc)) from None
    except LarkError as e:
        line = getattr(e, "line", "?")
        col = getattr(e, "column", "?")
        raise IRParseError(f"IR syntax error at line {line}, column {col}") from None
