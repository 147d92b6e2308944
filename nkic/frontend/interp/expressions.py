"""Expressions: literals, operators on compile-time values (32-bit int semantics, symbolic
affine integers), comparisons, truth, f-strings and comprehensions."""

from __future__ import annotations

import ast
import operator

from ...ir.affine import Affine, NonAffineError
from .. import pylib, registers
from ..registers import Register
from ..tensors import NonConstExtent, TensorView, type_name
from ..values import (
    MISSING,
    DynSlice,
    EnumMember,
    Function,
    Instance,
    IsaEnumMember,
    IteratorValue,
    NkiClass,
    OpaqueModule,
    Poison,
    PoisonError,
    RangeValue,
    Scope,
    UserError,
    is_symbolic,
    norm_int,
)
from .context import MARKED_VALUES
from .state import (
    INT32_MAX,
    INT32_MIN,
    MAX_PYTHON_ITERATIONS,
    CallSite,
    Frame,
    int32_overflow,
    is_error,
    is_none_literal,
    opaque_error,
)

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

#: Operators on two plain ints that no language redefines and that cannot fail but by leaving
#: int32 (the index arithmetic of unrolled loops): `binop` computes them first.
_INT_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}

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


_CMP_SYMBOLS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}

_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


_DUNDER = {
    ast.Add: "__add__",
    ast.Sub: "__sub__",
    ast.Mult: "__mul__",
    ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__",
    ast.Mod: "__mod__",
    ast.MatMult: "__matmul__",
}


#: Exact types that compare equal or unequal as in Python (`compare`'s fast path).
_PLAIN_SCALARS = frozenset({bool, int, float, str, type(None)})

#: A comparison's right operand not evaluated yet (`_compare_chain`).
_UNEVALUATED = object()

#: Exact types whose truth value is Python's (`truth`'s fast path).
_PLAIN_TRUTH = frozenset({bool, int, float, str, list, tuple, dict, type(None)})


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


def _int_enum_value(v):
    """An `IntEnum` member compares as its int value (Python semantics); anything else as is."""
    return v.value if isinstance(v, EnumMember) and v.cls.int_enum else v


def _isa_enum_order(a, b) -> tuple:
    """The values that order `nisa` enum members (`get_nc_version() >= nc_version.gen3`, also
    against an int, as the NKI compiler does): their integer values, within one enum."""
    enums = sorted({v.enum for v in (a, b) if isinstance(v, IsaEnumMember)})
    if len(enums) > 1:
        raise UserError(
            "err_type_error", f"cannot order a nisa.{enums[0]} and a nisa.{enums[1]} member"
        )
    values = tuple(v.value if isinstance(v, IsaEnumMember) else v for v in (a, b))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UserError(
            "err_type_error",
            f"nisa.{enums[0]} members order by their integer values, against members of the "
            "same enum or integers",
        )
    return values


class Expressions:
    """Part of the `Specialiser`: operators, comparisons, truth, strings, comprehensions."""

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bytes, complex)):
            raise self.unsupported(node)
        return node.value

    def visit_Name(self, node: ast.Name):
        # the common case inline (most nodes are names): a plain value outside symbolic loops
        name = node.id
        s = self.frames[-1].scope
        while s is not None:
            found = s.vars
            if name in found:
                if not self.attempts:
                    value = found[name]
                    if type(value) not in MARKED_VALUES:
                        return value
                break
            s = s.parent
        return self.load_name(name, node)

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List):
        return self._elements(node.elts)

    def _elements(self, elts) -> list:
        out = []
        for e in elts:
            if type(e) is ast.Starred:
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
        """The kernel rule that dict keys are strings (module-level host code may use any)."""
        if self.host_code and not self.in_kernel:
            return
        if self.language.rules.string_dict_keys and not isinstance(key, str):
            raise UserError(
                "err_type_error",
                f"dict keys must be strings in NKI, got {type_name(key)}",
                node,
            )

    def visit_Slice(self, node: ast.Slice):
        lower, upper, step = node.lower, node.upper, node.step
        return slice(
            None if lower is None else self.visit(lower),
            None if upper is None else self.visit(upper),
            None if step is None else self.visit(step),
        )

    def visit_Subscript(self, node: ast.Subscript):
        obj = self.visit(node.value)
        key = self.visit(node.slice)
        if (
            type(key) is int
            and (type(obj) is tuple or type(obj) is list)
            and -len(obj) <= key < len(obj)
            and self.plain_subscript
        ):
            return obj[key]  # `getitem`'s case of an item of a shape, without its call
        return self.getitem(obj, key, node)

    def visit_Attribute(self, node: ast.Attribute):
        base = node.value
        if type(base) is ast.Name and not self.attempts:
            # `visit`'s fast path for the name, inline: most attributes are read off a name
            # (`nl.x`, `self.x`, `t.shape`)
            name = base.id
            s = self.frames[-1].scope
            while s is not None:
                found = s.vars
                if name in found:
                    obj = found[name]
                    if type(obj) is Instance:  # `getattr`'s first case, without its call
                        attrs = obj.attrs
                        if node.attr in attrs:
                            return attrs[node.attr]
                    if type(obj) not in MARKED_VALUES:
                        return self.getattr(obj, node.attr, node)
                    break
                s = s.parent
        return self.getattr(self.visit(base), node.attr, node)

    def visit_IfExp(self, node: ast.IfExp):
        value = self.visit(node.test)  # `condition`, its most frequent case without its call
        if type(value) is not bool:
            value = self.condition_value(value, node.test)
        return self.visit(node.body) if value else self.visit(node.orelse)

    def visit_BoolOp(self, node: ast.BoolOp):
        value = None
        for i, sub in enumerate(node.values):
            value = self.visit(sub)
            if i == len(node.values) - 1:
                break
            if isinstance(value, TensorView):
                t = self.tensor_truth(
                    sub,
                    UserError(
                        "err_ambiguous_tensor_truth_value",
                        "the truth value of a tensor is ambiguous",
                        sub,
                        "and/or/not need compile-time values; combine tensors with nisa "
                        "instructions (op=nl.logical_and)",
                    ),
                )
            else:
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
                return not self.tensor_truth(
                    node.operand,
                    UserError(
                        "err_ambiguous_tensor_truth_value",
                        "the truth value of a tensor is ambiguous",
                        node.operand,
                    ),
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
        left, right = node.left, node.right
        # an int literal operand (`i * 128`, `n // 2`) without a call to `visit`
        a = left.value if type(left) is ast.Constant and type(left.value) is int else None
        if a is None:
            a = self.visit(left)
        b = right.value if type(right) is ast.Constant and type(right.value) is int else None
        if b is None:
            b = self.visit(right)
        return self.binop(node.op, a, b, node=node)

    def binop(self, op: ast.operator, a, b, inplace: bool = False, node: ast.AST | None = None):
        if type(a) is int and type(b) is int and type(op) in _INT_BINOPS:
            result = _INT_BINOPS[type(op)](a, b)
            if INT32_MIN <= result <= INT32_MAX:
                return result
        if isinstance(a, Poison) or isinstance(b, Poison):
            raise PoisonError()
        sym = _BINOP_SYMBOLS.get(type(op), "?")
        if not self.plain_binop:
            special = self.language.binop(self, sym, a, b, CallSite(node), inplace)
            if special is not MISSING:
                return special
        if isinstance(a, Register) or isinstance(b, Register):
            return registers.binop(self, sym, a, b, CallSite(node))
        if isinstance(a, TensorView) or isinstance(b, TensorView):
            raise UserError(
                "err_tensor_operator",
                f"the operator '{sym}' is not defined on tensors in NKI 0.3.0 and later",
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
            if isinstance(b, int) and len(a) * max(b, 0) > MAX_PYTHON_ITERATIONS:
                raise UserError("err_value_error", "sequence repetition is too large")
        if isinstance(op, ast.Add) and isinstance(a, (list, str, tuple)):
            if isinstance(b, (list, str, tuple)) and len(a) + len(b) > MAX_PYTHON_ITERATIONS:
                raise UserError(
                    "err_specialisation_limit",
                    f"a sequence of more than {MAX_PYTHON_ITERATIONS} items at specialisation",
                    None,
                    "build large data outside the kernel (an input or nl.shared_constant)",
                )
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
            raise int32_overflow(f"{a} {sym} {b} = {result}")
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
        ops = node.ops
        if len(ops) == 1:
            right = self.visit(node.comparators[0])
            if type(left) is int and type(right) is int:
                # `compare`'s first case, without its call (no language redefines it)
                cmp = _CMPOPS.get(type(ops[0]))
                if cmp is not None:
                    return cmp(left, right)
            return self._compare_chain(node, left, right)
        return self._compare_chain(node, left, _UNEVALUATED)

    def _compare_chain(self, node: ast.Compare, left, right):
        """The chain of `node`'s comparisons from `left`, the value of its left operand;
        `right` is its first right operand's value when already evaluated."""
        left_node = node.left
        for op, right_node in zip(node.ops, node.comparators):
            if right is _UNEVALUATED:
                right = self.visit(right_node)
            kind = type(op)
            if kind is ast.Is or kind is ast.IsNot:
                if not (is_none_literal(right_node) or is_none_literal(left_node)) and (
                    self.language.rules.is_only_against_none
                ):
                    raise is_error(node)
                result = (left is right) if kind is ast.Is else (left is not right)
            else:
                result = self.compare(op, left, right)
                if (
                    type(result) is not bool
                    and getattr(result, "is_mask", False)
                    and len(node.ops) == 1
                ):
                    return result  # a Beta 1 mask predicate (`beta1_mask.py`)
            if not result:
                return False
            left, left_node, right = right, right_node, _UNEVALUATED
        return True

    def compare(self, op: ast.cmpop, a, b) -> bool:
        if type(a) is int and type(b) is int:  # no language redefines comparing plain ints
            cmp = _CMPOPS.get(type(op))
            if cmp is not None:
                return cmp(a, b)
        elif self.plain_binop and type(a) in _PLAIN_SCALARS and type(b) in _PLAIN_SCALARS:
            # what the general path below does with two plain scalars, without its checks
            kind = type(op)
            if kind is ast.Eq:
                return a == b
            if kind is ast.NotEq:
                return a != b
        if isinstance(a, Poison) or isinstance(b, Poison):
            raise PoisonError()
        for v in (a, b):
            if isinstance(v, OpaqueModule):  # its value is unknown: no comparison can be right
                raise opaque_error(v, None)
        if not self.plain_binop:
            special = self.language.binop(self, type(op).__name__, a, b, CallSite(None))
            if special is not MISSING:
                return special
        if (isinstance(a, Register) or isinstance(b, Register)) and None not in (a, b):
            return registers.binop(self, _CMP_SYMBOLS.get(type(op), "?"), a, b, CallSite(None))
        if isinstance(a, TensorView) or isinstance(b, TensorView):
            if isinstance(op, (ast.Eq, ast.NotEq)) and (a is None or b is None):
                # `t == None` / `t != None`: NKI 0.3's replacement for `is` (a tensor is never None)
                return isinstance(op, ast.NotEq)
            if isinstance(op, (ast.In, ast.NotIn)) and not isinstance(b, TensorView):
                pass
            else:
                raise UserError(
                    "err_tensor_operator",
                    "tensors cannot be compared at specialisation time",
                    None,
                    "compare tensor metadata (t.shape, t.dtype) or use an ALU comparison op",
                )
        if self.attempts and (isinstance(a, Affine) or isinstance(b, Affine)):
            decided = self.decide_compare(op, a, b)  # a plain `range` loop's variable
            if decided is not None:
                return decided
        a, b = self.deep_concrete(a), self.deep_concrete(b)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(b, RangeValue):
                b = b.as_range()
            if isinstance(b, dict):
                b = list(b.keys())
            if isinstance(b, IteratorValue):  # consumed up to the first match, as in Python
                rest = b.items[b.pos :]
                found = next((i for i, x in enumerate(rest) if x == a), None)
                self.touch(b)
                b.take(len(rest) if found is None else found + 1)
                return (found is not None) == isinstance(op, ast.In)
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
        if isinstance(a, IsaEnumMember) or isinstance(b, IsaEnumMember):
            a, b = _isa_enum_order(a, b)
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
        if type(v) in _PLAIN_TRUTH:
            return bool(v)
        if isinstance(v, Poison):
            raise PoisonError()
        if isinstance(v, Affine):
            v = self.need_concrete(v, "a condition")
        if isinstance(v, OpaqueModule):
            raise opaque_error(v, None)
        if isinstance(v, Register):
            raise registers.truth_error(v)
        if isinstance(v, TensorView):
            return self.tensor_truth(
                None,
                UserError(
                    "err_ambiguous_tensor_truth_value",
                    "the truth value of a tensor is ambiguous",
                    None,
                    "conditions must be compile-time values; compare t.shape or use `t is None`",
                ),
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

    def tensor_truth(self, node: ast.AST | None, error: UserError) -> bool:
        """A tensor used as a truth value: where the kernel is traced as Python (NKI 0.7) it is
        an object without `__bool__`, so always true, and a warning says that the condition
        does not look at the values; elsewhere `error`."""
        if self.language.rules.tensor_truth != "object":
            raise error
        self.warn(
            "nkic_tensor_truth_is_object",
            f"a tensor as a truth value is always true in {self.language.name}: the condition "
            "tests the Python object, not the tensor's values",
            node,
            "write `t is not None` to test that a tensor was given; compare values on the "
            "device with nisa instructions (nisa.tensor_scalar, nisa.select)",
        )
        return True

    def visit_JoinedStr(self, node: ast.JoinedStr):
        parts = []
        for v in node.values:
            if type(v) is ast.Constant:
                text = v.value  # a literal part: a str
            elif type(v) is ast.FormattedValue and v.conversion == -1 and v.format_spec is None:
                # `visit(v)` without its calls: `{x}` of an int or str is most frequent
                text = self.visit(v.value)
                if type(text) is int or type(text) is str:
                    text = format(text, "")
                else:
                    try:
                        text = self.formatted(v, text)
                    except UserError as err:  # as `visit` would locate it
                        raise self.error_node(err, v) from None
                    except NonConstExtent as e:
                        self.need_concrete(e.extent)
                        raise
            else:
                text = self.visit(v)
            parts.append(text if type(text) is str else self.to_str(text))
        return "".join(parts)

    def visit_FormattedValue(self, node: ast.FormattedValue):
        v = self.visit(node.value)
        if node.conversion == -1 and node.format_spec is None and type(v) in (int, str):
            return format(v, "")  # the common `{name}` of a plain int or str
        return self.formatted(node, v)

    def formatted(self, node: ast.FormattedValue, v) -> str:
        """The text of `node`, whose expression has the value `v`."""
        v = self.deep_concrete(v)
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
        if isinstance(v, pylib.ExceptionValue):  # str(e) of a caught exception
            return v.message
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
        if isinstance(v, IteratorValue):
            return f"<{v.kind} object>"
        if isinstance(v, Function):
            return f"<function {v.name}>"
        if isinstance(v, IsaEnumMember):
            return f"{v.enum}.{v.name}"
        return repr(v)

    def visit_ListComp(self, node: ast.ListComp):
        out: list = []
        self._comprehension(node.generators, lambda: out.append(self.visit(node.elt)))
        return out

    def visit_GeneratorExp(self, node: ast.GeneratorExp):
        return IteratorValue("generator", self.visit_ListComp(node))

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
            built = self.builder.built
            self.assign(gen.target, item)
            if all(self.condition(c) for c in gen.ifs):
                if i + 1 < len(generators):
                    self._comp_level(generators, i + 1, self.visit(generators[i + 1].iter), emit)
                else:
                    emit()
            self._count_emitted(gen.iter, built)
