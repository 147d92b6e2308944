"""The Python part of the meta-programming language: builtins, methods of lists, dicts and
strings, and the standard modules a kernel may import (math, enum, dataclasses, functools,
operator, typing, a few numpy names). Every builtin is `fn(interp, call, *args, **kwargs)`."""

from __future__ import annotations

import ast
import functools
import inspect
import math
import re
from dataclasses import dataclass

from ..ir.affine import Affine
from .host_modules import host_modules
from .tensors import TensorView, type_name
from .values import (
    MISSING,
    BoundMethod,
    Builtin,
    ClassMethod,
    DynSlice,
    EnumAuto,
    EnumBase,
    EnumMember,
    FieldDefault,
    Function,
    Instance,
    IteratorValue,
    ModuleValue,
    NkiClass,
    NkiObjectBase,
    Property,
    PyType,
    RangeValue,
    StaticMethod,
    SuperProxy,
    TensorTypeAnnotation,
    TypingMarker,
    UserError,
    norm_int,
)


@dataclass(frozen=True)
class ExceptionValue:
    """An exception object built for `raise` (reported as `err_raise`)."""

    kind: str
    message: str


# ---------------------------------------------------------------------------------------------
# signatures


@functools.cache
def _signature(fn) -> inspect.Signature:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[2:]
    return sig.replace(parameters=params)


def check_signature(fn: Builtin, args: list, kwargs: dict):
    """None if the call binds, else (code, message, offending keyword or None)."""
    try:
        _signature(fn.fn).bind(*args, **kwargs)
    except TypeError as e:
        msg = str(e)
        m = re.search(r"unexpected keyword argument '(\w+)'", msg)
        if m:
            return (
                "err_unexpected_keyword",
                f"got an unexpected keyword argument '{m.group(1)}'",
                m.group(1),
            )
        m = re.search(r"missing a required argument: '(\w+)'", msg)
        if m:
            return "err_missing_argument", f"missing required argument '{m.group(1)}'", None
        return "err_type_error", msg, None
    except ValueError:
        return None
    return None


# ---------------------------------------------------------------------------------------------
# helpers


def _num(ip, v, what="a number"):
    v = ip.need_concrete(v)
    if not isinstance(v, (int, float)):
        raise UserError("err_type_error", f"expected {what}, got {type_name(v)}")
    return v


def _less(ip, a, b) -> bool:
    return ip.compare(ast.Lt(), a, b)


def _key_items(ip, call, items, key):
    if key is None:
        return [(x, x) for x in items]
    return [(ip.call(key, [x], {}, call), x) for x in items]


def _min_max(ip, call, args, key, default, want_max: bool, name: str):
    items = ip.iterate(args[0], call.node) if len(args) == 1 else list(args)
    if not items:
        if default is not MISSING:
            return default
        raise UserError("err_value_error", f"{name}() of an empty sequence")
    keyed = _key_items(ip, call, items, key)
    best_k, best = keyed[0]
    for k, x in keyed[1:]:
        if _less(ip, best_k, k) if want_max else _less(ip, k, best_k):
            best_k, best = k, x
    return best


# ---------------------------------------------------------------------------------------------
# builtins


def _len(ip, call, obj):
    if isinstance(obj, (list, tuple, str, dict)):
        return len(obj)
    if isinstance(obj, RangeValue):
        return len(obj.as_range())
    if isinstance(obj, TensorView):
        return obj.shape[0]
    if isinstance(obj, Instance):
        method = obj.cls.lookup("__len__")
        if isinstance(method, Function):
            return ip.call_function(method, [obj], {}, call)
    if isinstance(obj, NkiClass) and obj.is_enum:
        return len(obj.members)
    raise UserError("err_type_error", f"object of type {type_name(obj)} has no len()")


def _min(ip, call, *args, key=None, default=MISSING):
    if not args:
        raise UserError("err_type_error", "min expected at least 1 argument")
    return _min_max(ip, call, args, key, default, False, "min")


def _max(ip, call, *args, key=None, default=MISSING):
    if not args:
        raise UserError("err_type_error", "max expected at least 1 argument")
    return _min_max(ip, call, args, key, default, True, "max")


def _abs(ip, call, x):
    return abs(_num(ip, x))


def _sum(ip, call, iterable, start=0):
    total = start
    for x in ip.iterate(iterable, call.node):
        total = ip.binop(ast.Add(), total, x)
    return total


def _range(ip, call, *args):
    return make_range(ip, "range", args)


def make_range(ip, kind: str, args) -> RangeValue:
    if not 1 <= len(args) <= 3:
        raise UserError("err_type_error", f"range expected 1 to 3 arguments, got {len(args)}")
    ints = [ip.need_int(a, "an integer range bound") for a in args]
    if len(ints) == 1:
        ints = [0, ints[0]]
    start, stop = ints[0], ints[1]
    step = ints[2] if len(ints) == 3 else 1
    if step == 0:
        raise UserError("err_value_error", "range() step must not be zero")
    return RangeValue(kind, start, stop, step)


def _enumerate(ip, call, iterable, start=0):
    items = ip.iterate(iterable, call.node)
    return IteratorValue("enumerate", [(start + i, x) for i, x in enumerate(items)])


def _zip(ip, call, *iterables):
    columns = [ip.iterate(it, call.node) for it in iterables]
    return IteratorValue("zip", [tuple(t) for t in zip(*columns)])


def _reversed(ip, call, seq):
    if isinstance(seq, IteratorValue):
        raise UserError("err_type_error", f"'{seq.kind}' object is not reversible", call.node)
    return IteratorValue("reversed", list(reversed(ip.iterate(seq, call.node))))


def _iter(ip, call, obj, sentinel=MISSING):
    if sentinel is not MISSING:
        raise UserError(
            "err_unsupported_syntax",
            "iter(callable, sentinel) is not supported when compiling a kernel",
            call.node,
            "loop with `while True:` and `break` on the sentinel",
        )
    if isinstance(obj, IteratorValue):
        return obj
    kind = {list: "list_iterator", tuple: "tuple_iterator", str: "str_iterator"}
    return IteratorValue(kind.get(type(obj), "iterator"), ip.iterate(obj, call.node))


def _next(ip, call, it, default=MISSING):
    if not isinstance(it, IteratorValue):
        raise UserError(
            "err_type_error", f"'{type_name(it)}' object is not an iterator", call.node,
            "call iter() on it first",
        )  # fmt: skip
    if it.pos < len(it.items):
        ip.touch(it)
        return it.take(1)[0]
    if default is not MISSING:
        return default
    err = UserError(
        "err_raised_exception",
        f"StopIteration: next() on an exhausted {it.kind}",
        call.node,
        "give next() a default (`next(it, None)`), or catch StopIteration",
    )
    err.raised = ExceptionValue("StopIteration", "")
    raise err


def _sorted(ip, call, iterable, key=None, reverse=False):
    items = ip.iterate(iterable, call.node)
    return _sort(ip, call, items, key, reverse)


def _sort(ip, call, items, key, reverse):
    keyed = _key_items(ip, call, items, key)

    def cmp(a, b):
        if _less(ip, a[0], b[0]):
            return -1
        if _less(ip, b[0], a[0]):
            return 1
        return 0

    out = [x for _, x in sorted(keyed, key=functools.cmp_to_key(cmp))]
    return out[::-1] if ip.truth(reverse) else out


def isinstance_of(v, t) -> bool:
    if isinstance(t, tuple):
        return any(isinstance_of(v, x) for x in t)
    if isinstance(t, PyType):
        if isinstance(v, Affine) and int in t.pytypes:
            return True
        return isinstance(v, t.pytypes)
    if isinstance(t, NkiClass):
        if isinstance(v, Instance):
            return v.cls.is_subclass_of(t)
        if isinstance(v, EnumMember):
            return v.cls.is_subclass_of(t)
        return False
    if isinstance(t, NkiObjectBase):
        return isinstance(v, Instance)
    if isinstance(t, EnumBase):
        return isinstance(v, EnumMember)
    raise UserError("err_type_error", "isinstance() arg 2 must be a type or tuple of types")


def _isinstance(ip, call, obj, classinfo):
    return isinstance_of(obj, classinfo)


def _divmod(ip, call, a, b):
    return (ip.binop(ast.FloorDiv(), a, b), ip.binop(ast.Mod(), a, b))


def _print(ip, call, *args, sep=" ", end="\n"):
    text = sep.join(ip.to_str(a) for a in args) + end
    if not ip.in_kernel and ip.frames and ip.module.file == ip.loader.kernel_path:
        # host code at the top level of the kernel's own file (a script's driver code): Python
        # prints it when the user runs the script; nkic reading the file for the kernel's
        # definitions stays silent. Helper modules still print once, as on import.
        return None
    ip.print_out(text)


def _round(ip, call, x, ndigits=None):
    x = _num(ip, x)
    return round(x) if ndigits is None else round(x, ip.need_int(ndigits))


def _any(ip, call, iterable):
    return any(ip.truth(x) for x in ip.iterate(iterable, call.node))


def _all(ip, call, iterable):
    return all(ip.truth(x) for x in ip.iterate(iterable, call.node))


def _slice(ip, call, *args):
    if not 1 <= len(args) <= 3:
        raise UserError("err_type_error", "slice expected 1 to 3 arguments")
    return slice(*args)


def _hasattr(ip, call, obj, name):
    try:
        ip.getattr(obj, name)
    except UserError:
        return False
    return True


def _getattr(ip, call, obj, name, default=MISSING):
    if not isinstance(name, str):
        raise UserError("err_type_error", "getattr(): attribute name must be a string")
    try:
        return ip.getattr(obj, name)
    except UserError:
        if default is MISSING:
            raise
        return default


def _setattr(ip, call, obj, name, value):
    ip.setattr(obj, name, value)


def _map(ip, call, fn, *iterables):
    columns = [ip.iterate(it, call.node) for it in iterables]
    return IteratorValue("map", [ip.call(fn, list(args), {}, call) for args in zip(*columns)])


def _filter(ip, call, fn, iterable):
    items = ip.iterate(iterable, call.node)
    if fn is None:
        return IteratorValue("filter", [x for x in items if ip.truth(x)])
    return IteratorValue("filter", [x for x in items if ip.truth(ip.call(fn, [x], {}, call))])


def _callable(ip, call, obj):
    return isinstance(obj, (Function, Builtin, BoundMethod, NkiClass, PyType))


def _repr(ip, call, obj):
    return ip.to_repr(obj)


def _pow(ip, call, base, exp):
    return ip.binop(ast.Pow(), base, exp)


def _super(ip, call):
    fn = ip.frame.func
    if fn is None or fn.owner is None or not fn.node.args.args:
        raise UserError("err_type_error", "super(): no enclosing method")
    first = fn.node.args.args[0].arg
    return SuperProxy(fn.owner, ip.scope.vars[first])


def _breakpoint(ip, call, *args, **kwargs):
    raise UserError(
        "err_unsupported_syntax",
        "breakpoint() is not supported when compiling a kernel",
        call.node,
        "use print() (runs at specialisation time) or debug with the simulator",
    )


#: The built-in exception classes a kernel can raise and catch.
EXCEPTION_KINDS = (
    "Exception", "ValueError", "TypeError", "AssertionError", "NotImplementedError",
    "RuntimeError", "KeyError", "IndexError", "StopIteration",
)  # fmt: skip


@functools.cache
def exception_class(kind: str) -> Builtin:
    """The built-in exception class `kind` (one object per class: `except` compares it)."""

    def make(ip, call, *args):
        return ExceptionValue(kind, ", ".join(ip.to_str(a) for a in args))

    return Builtin(kind, make)


def _int(ip, call, x=0, base=MISSING):
    if base is not MISSING:
        if not isinstance(x, str):
            raise UserError("err_type_error", "int() can't convert non-string with explicit base")
        try:
            return int(x, ip.need_int(base))
        except ValueError as e:
            raise UserError("err_value_error", str(e)) from None
    x = norm_int(x)
    if isinstance(x, Affine):
        return x
    if isinstance(x, (bool, int)):
        return int(x)
    if isinstance(x, float):
        if math.isinf(x) or math.isnan(x):
            raise UserError("err_value_error", f"cannot convert {x} to int")
        return int(x)
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            raise UserError("err_value_error", f"invalid literal for int(): {x!r}") from None
    raise UserError(
        "err_type_error", f"int() argument must be a number or string, not {type_name(x)}"
    )


def _float(ip, call, x=0.0):
    x = ip.need_concrete(x)
    if isinstance(x, (bool, int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            raise UserError(
                "err_value_error", f"could not convert string to float: {x!r}"
            ) from None
    raise UserError(
        "err_type_error", f"float() argument must be a number or string, not {type_name(x)}"
    )


def _bool(ip, call, x=False):
    return ip.truth(x)


def _str(ip, call, x=""):
    return ip.to_str(x)


def _tuple(ip, call, x=()):
    return tuple(ip.iterate(x, call.node))


def _list(ip, call, x=()):
    return list(ip.iterate(x, call.node))


def _dict(ip, call, _items=None, /, **kwargs):
    out: dict = {}
    if isinstance(_items, dict):
        out.update(_items)
    elif _items is not None:
        for pair in ip.iterate(_items, call.node):
            items = ip.iterate(pair, call.node)
            if len(items) != 2:
                raise UserError("err_value_error", "dict() needs (key, value) pairs")
            ip.check_key(items[0])
            out[items[0]] = items[1]
    out.update(kwargs)
    return out


_TYPES = {
    "int": PyType("int", (int,), _int),
    "float": PyType("float", (float,), _float),
    "bool": PyType("bool", (bool,), _bool),
    "str": PyType("str", (str,), _str),
    "tuple": PyType("tuple", (tuple,), _tuple),
    "list": PyType("list", (list,), _list),
    "dict": PyType("dict", (dict,), _dict),
    "object": PyType("object", (object,), None),
}


def call_type(ip, t: PyType, args: list, kwargs: dict, call):
    if t.convert is None:
        raise UserError("err_type_error", f"cannot call {t.name}()")
    try:
        return t.convert(ip, call, *args, **kwargs)
    except TypeError:  # raised before the body runs when the arguments do not bind
        err = check_signature(Builtin(t.name, t.convert), args, kwargs)
        if err is None:
            raise
    raise UserError(err[0], f"{t.name}() {err[1]}", call.node)


def python_builtins() -> dict[str, object]:
    fns = {
        "len": _len, "min": _min, "max": _max, "abs": _abs, "sum": _sum, "range": _range,
        "enumerate": _enumerate, "zip": _zip, "reversed": _reversed, "sorted": _sorted,
        "isinstance": _isinstance, "divmod": _divmod, "print": _print, "round": _round,
        "any": _any, "all": _all, "slice": _slice, "hasattr": _hasattr, "getattr": _getattr,
        "setattr": _setattr, "map": _map, "filter": _filter, "callable": _callable,
        "repr": _repr, "pow": _pow, "super": _super, "breakpoint": _breakpoint,
        "iter": _iter, "next": _next,
    }  # fmt: skip
    out: dict[str, object] = {name: Builtin(name, fn) for name, fn in fns.items()}
    out.update(_TYPES)
    for kind in EXCEPTION_KINDS:
        out[kind] = exception_class(kind)
    out["NotImplemented"] = None
    out["staticmethod"] = Builtin("staticmethod", lambda ip, call, f: StaticMethod(f))
    out["classmethod"] = Builtin("classmethod", lambda ip, call, f: ClassMethod(f))
    out["property"] = Builtin("property", lambda ip, call, fget, fset=None: Property(fget, fset))
    return out


# ---------------------------------------------------------------------------------------------
# methods of built-in values


def _list_methods(ip, lst: list, name: str):
    if name == "append":  # by far the most frequent (every `lst.append` looks it up): alone

        def append_one(ip_, call, x):
            ip.touch(lst)
            lst.append(x)

        return append_one

    def mutate(fn):
        def wrapper(ip_, call, *args, **kwargs):
            ip.touch(lst)
            return fn(ip_, call, *args, **kwargs)

        # the call's arguments are checked against fn's signature (`inspect.signature`
        # follows `__wrapped__`); `functools.wraps` would copy more, on every `lst.append`
        wrapper.__wrapped__ = fn
        return wrapper

    def append(ip_, call, x):
        lst.append(x)

    def extend(ip_, call, it):
        lst.extend(ip.iterate(it, call.node))

    def insert(ip_, call, i, x):
        lst.insert(ip.need_int(i), x)

    def pop(ip_, call, i=-1):
        if not lst:
            raise UserError("err_value_error", "pop from an empty list")
        try:
            return lst.pop(ip.need_int(i))
        except IndexError:
            raise UserError("err_value_error", "pop index out of range") from None

    def remove(ip_, call, x):
        x = ip.deep_concrete(x)
        if x not in lst:
            raise UserError("err_value_error", f"list.remove(x): {ip.to_repr(x)} not in list")
        lst.remove(x)

    def reverse(ip_, call):
        lst.reverse()

    def clear(ip_, call):
        lst.clear()

    def sort(ip_, call, key=None, reverse=False):
        lst[:] = _sort(ip, call, list(lst), key, reverse)

    mutating = {
        "append": append, "extend": extend, "insert": insert, "pop": pop, "remove": remove,
        "reverse": reverse, "clear": clear, "sort": sort,
    }  # fmt: skip
    if name in mutating:  # only the method asked for is wrapped: this runs on every `lst.x`
        return mutate(mutating[name])
    if name == "copy":
        return lambda ip_, call: list(lst)
    return _sequence_methods(ip, lst).get(name)


def _sequence_methods(ip, seq) -> dict:
    def index(ip_, call, x, start=0, stop=None):
        x = ip.deep_concrete(x)
        try:
            return seq.index(x, ip.need_int(start), len(seq) if stop is None else ip.need_int(stop))
        except ValueError:
            raise UserError("err_value_error", f"{ip.to_repr(x)} is not in the sequence") from None

    def count(ip_, call, x):
        return seq.count(ip.deep_concrete(x))

    return {"index": index, "count": count}


def _dict_methods(ip, d: dict, name: str):
    def mutate(fn):
        def wrapper(ip_, call, *args, **kwargs):
            ip.touch(d)
            return fn(ip_, call, *args, **kwargs)

        # the call's arguments are checked against fn's signature (`inspect.signature`
        # follows `__wrapped__`); `functools.wraps` would copy more, on every `d.pop`
        wrapper.__wrapped__ = fn
        return wrapper

    def get(ip_, call, key, default=None):
        ip.check_key(key)
        return d.get(key, default)

    def setdefault(ip_, call, key, default=None):
        ip.check_key(key)
        if key not in d:
            ip.touch(d)
            d[key] = default
        return d[key]

    def pop(ip_, call, key, default=MISSING):
        ip.check_key(key)
        if key in d:
            return d.pop(key)
        if default is MISSING:
            raise UserError("err_value_error", f"key {key!r} not found")
        return default

    def update(ip_, call, other=None, **kwargs):
        if other is not None:
            d.update(_dict(ip, call, other))
        d.update(kwargs)

    def clear(ip_, call):
        d.clear()

    if name in ("pop", "update", "clear"):  # only the method asked for is wrapped
        return mutate({"pop": pop, "update": update, "clear": clear}[name])
    table = {
        "get": get, "setdefault": setdefault,
        "keys": lambda ip_, call: list(d.keys()),
        "values": lambda ip_, call: list(d.values()),
        "items": lambda ip_, call: [(k, v) for k, v in d.items()],
        "copy": lambda ip_, call: dict(d),
    }  # fmt: skip
    return table.get(name)


def _str_methods(ip, s: str, name: str):
    def fmt(ip_, call, *args, **kwargs):
        args = [_plain(ip, a) for a in args]
        kwargs = {k: _plain(ip, v) for k, v in kwargs.items()}
        try:
            return s.format(*args, **kwargs)
        except (IndexError, KeyError, ValueError) as e:
            raise UserError("err_value_error", f"str.format: {e}") from None

    def join(ip_, call, it):
        items = ip.iterate(it, call.node)
        if not all(isinstance(x, str) for x in items):
            raise UserError("err_type_error", "str.join expects strings")
        return s.join(items)

    simple = {
        "upper", "lower", "strip", "lstrip", "rstrip", "startswith", "endswith", "replace",
        "split", "rsplit", "find", "rfind", "count", "isdigit", "isalpha", "title", "zfill",
        "capitalize", "index", "splitlines", "ljust", "rjust", "center", "partition",
    }  # fmt: skip
    if name == "format":
        return fmt
    if name == "join":
        return join
    if name in simple:
        method = getattr(s, name)

        def call_simple(ip_, call, *args):
            args = [ip.deep_concrete(a) for a in args]
            if not all(isinstance(a, (str, int, tuple)) or a is None for a in args):
                raise UserError("err_type_error", f"str.{name}: invalid argument")
            try:
                return method(*args)
            except (ValueError, TypeError) as e:
                raise UserError("err_value_error", f"str.{name}: {e}") from None

        return call_simple
    return None


def _plain(ip, v):
    v = ip.deep_concrete(v)
    return v if isinstance(v, (int, float, str, bool, type(None))) else ip.to_str(v)


def attribute(ip, obj, name: str):
    """Attributes of built-in Python values (list/dict/str/tuple methods, slice fields, …);
    MISSING for anything else."""
    fn = None
    if isinstance(obj, list):
        fn = _list_methods(ip, obj, name)
    elif isinstance(obj, dict):
        fn = _dict_methods(ip, obj, name)
    elif isinstance(obj, str):
        fn = _str_methods(ip, obj, name)
    elif isinstance(obj, tuple):
        fn = _sequence_methods(ip, obj).get(name)
    elif isinstance(obj, slice) and name in ("start", "stop", "step"):
        return getattr(obj, name)
    elif isinstance(obj, DynSlice) and name in ("start", "size"):
        return getattr(obj, name)
    elif isinstance(obj, RangeValue) and name in ("start", "stop", "step"):
        return getattr(obj, name)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and name == "item":
        # numpy scalars (np.finfo(...).min) are modelled as Python numbers
        return Builtin("item", lambda ip_, call: obj)
    elif isinstance(obj, (int, Affine)) and not isinstance(obj, bool) and name == "bit_length":
        return Builtin("int.bit_length", lambda ip_, call: ip.need_int(obj).bit_length())
    elif isinstance(obj, Property) and name in ("getter", "setter"):
        if name == "getter":
            return Builtin("property.getter", lambda ip_, call, f: Property(f, obj.fset))
        return Builtin("property.setter", lambda ip_, call, f: Property(obj.fget, f))
    if fn is not None:
        return Builtin(f"{type(obj).__name__}.{name}", fn)
    return MISSING


def subscript(ip, obj, key):
    """`obj[key]` for annotation objects (`nt.tensor[...]`, `typing.Tuple[...]`)."""
    if isinstance(obj, TypingMarker):
        if obj.name in ("nt.tensor", "nt.mutable_tensor"):
            return tensor_annotation(ip, key)
        return obj
    return MISSING


def tensor_annotation(ip, key) -> TensorTypeAnnotation:
    from ..ir.types import DTYPES

    items = list(key) if isinstance(key, tuple) else [key]
    dtype = None
    if items and isinstance(items[-1], str):
        dtype = items.pop()
        if dtype not in DTYPES:
            raise UserError("err_invalid_argument", f"unknown dtype {dtype!r} in nt.tensor[...]")
    if len(items) == 1 and isinstance(items[0], (tuple, list)):
        items = list(items[0])
    shape = tuple(ip.need_int(d, "a tensor dimension") for d in items)
    if not shape or any(d <= 0 for d in shape):
        raise UserError("err_invalid_argument", f"invalid tensor shape {shape} in nt.tensor[...]")
    return TensorTypeAnnotation(shape, dtype)


# ---------------------------------------------------------------------------------------------
# standard modules


#: Largest integer result (in bits) math.factorial and math.comb may compute at
#: specialisation: beyond it they would take minutes.
MAX_RESULT_BITS = 1 << 20


def _result_bits(name: str, args: list) -> float:
    """An upper bound of the bits of math.factorial(n) / math.comb(n, k)."""
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if name == "factorial" and ints:
        n = max(ints[0], 1)
        return n * math.log2(n + 1)
    if name == "comb" and len(ints) == 2:
        n, k = ints
        return min(k, n - k) * math.log2(max(n, 2))
    return 0.0


def _math_fn(name: str, fn):
    def call(ip, call_, *args, **kwargs):
        values = [_num(ip, a) for a in args]
        if _result_bits(name, values) > MAX_RESULT_BITS:
            raise UserError(
                "err_specialisation_limit",
                f"math.{name}({', '.join(map(str, values))}) has more than {MAX_RESULT_BITS} bits",
                None,
                "compute such numbers outside the kernel and pass the value in",
            )
        return fn(*values, **{k: _num(ip, v) for k, v in kwargs.items()})

    def wrapped(ip, call_, *args, **kwargs):
        try:
            return call(ip, call_, *args, **kwargs)
        except (ValueError, OverflowError, TypeError) as e:
            raise UserError("err_value_error", f"math.{name}: {e}") from None
        except ZeroDivisionError as e:
            raise UserError("err_value_error", f"math.{name}: {e}") from None

    return Builtin(f"math.{name}", wrapped)


def _prod(ip, call, iterable, start=1):
    total = start
    for x in ip.iterate(iterable, call.node):
        total = ip.binop(ast.Mult(), total, x)
    return total


def _math_module() -> ModuleValue:
    attrs: dict[str, object] = {
        name: _math_fn(name, getattr(math, name))
        for name in (
            "ceil", "floor", "log2", "log", "log10", "sqrt", "exp", "pow", "gcd", "lcm",
            "isqrt", "fabs", "trunc", "isclose", "comb", "factorial", "copysign", "isinf",
            "isnan", "sin", "cos", "tan", "tanh", "erf",
        )
    }  # fmt: skip
    attrs["prod"] = Builtin("math.prod", _prod)
    attrs.update(inf=math.inf, nan=math.nan, pi=math.pi, e=math.e)
    return ModuleValue("math", attrs)


def _type_limits() -> tuple[dict[str, dict], dict[str, dict]]:
    """`np.finfo` / `np.iinfo` of the NKI dtypes, as Python numbers (numpy's own values)."""
    import ml_dtypes
    import numpy as np

    floats = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
    floats |= {n: getattr(ml_dtypes, n) for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2")}
    finfo = {}
    for name, t in floats.items():
        fi = ml_dtypes.finfo(t)
        finfo[name] = {
            "min": float(fi.min), "max": float(fi.max), "eps": float(fi.eps),
            "tiny": float(fi.tiny), "smallest_normal": float(fi.smallest_normal),
            "resolution": float(fi.resolution), "bits": int(fi.bits), "dtype": name,
        }  # fmt: skip
    iinfo = {}
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        ii = np.iinfo(name)
        iinfo[name] = {"min": int(ii.min), "max": int(ii.max), "bits": ii.bits, "dtype": name}
    return finfo, iinfo


_FINFO, _IINFO = _type_limits()


def _type_info(kind: str, table: dict[str, dict]):
    def info(ip, call, dtype):
        if not isinstance(dtype, str) or dtype not in table:
            raise UserError(
                "err_type_error",
                f"np.{kind}() takes one of {', '.join(table)}, got {ip.to_repr(dtype)}",
            )
        return ModuleValue(f"numpy.{kind}({dtype})", dict(table[dtype]), strict=False)

    return Builtin(f"np.{kind}", info)


def _numpy_module() -> ModuleValue:
    attrs: dict[str, object] = {
        "float32": "float32", "float16": "float16", "int8": "int8", "int16": "int16",
        "int32": "int32", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
        "bool_": "bool", "inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e,
    }  # fmt: skip
    attrs["prod"] = Builtin("np.prod", _prod)
    attrs["finfo"] = _type_info("finfo", _FINFO)
    attrs["iinfo"] = _type_info("iinfo", _IINFO)
    for name in ("ceil", "floor", "sqrt", "log2", "exp"):
        attrs[name] = _math_fn(name, getattr(math, name))
    return ModuleValue("numpy", attrs)


def _dataclass(ip, call, cls=None, *, frozen=False, eq=True, repr=True, init=True, order=False,
               unsafe_hash=False, kw_only=False, slots=False):  # fmt: skip
    def apply(ip_, call_, c):
        if not isinstance(c, NkiClass):
            raise UserError("err_type_error", "@dataclass applies to classes")
        c.is_dataclass = True
        c.frozen = bool(frozen)
        return c

    if cls is None:
        return Builtin("dataclass", apply)
    return apply(ip, call, cls)


def _field(ip, call, *, default=MISSING, default_factory=MISSING, init=True, repr=True,
           hash=None, compare=True, metadata=None, kw_only=MISSING):  # fmt: skip
    return FieldDefault(default, default_factory)


def _replace(ip, call, obj, **changes):
    if not isinstance(obj, Instance):
        raise UserError("err_type_error", "replace() needs a dataclass instance")
    new = Instance(obj.cls)
    new.attrs = dict(obj.attrs)
    for k, v in changes.items():
        if k not in new.attrs:
            raise UserError("err_unexpected_keyword", f"replace() got an unknown field '{k}'")
        new.attrs[k] = v
    return new


def _asdict(ip, call, obj):
    if not isinstance(obj, Instance):
        raise UserError("err_type_error", "asdict() needs a dataclass instance")
    return dict(obj.attrs)


def _reduce(ip, call, fn, iterable, initial=MISSING):
    items = ip.iterate(iterable, call.node)
    if initial is MISSING:
        if not items:
            raise UserError("err_type_error", "reduce() of an empty sequence with no initial value")
        acc, items = items[0], items[1:]
    else:
        acc = initial
    for x in items:
        acc = ip.call(fn, [acc, x], {}, call)
    return acc


def _partial(ip, call, fn, *args, **kwargs):
    def bound(ip_, call_, *more, **kw):
        return ip.call(fn, [*args, *more], {**kwargs, **kw}, call_)

    return Builtin("functools.partial", bound)


def _identity_decorator(ip, call, fn=None, **kwargs):
    if fn is None or isinstance(fn, int):
        return Builtin("decorator", lambda ip_, call_, f: f)
    return fn


def _operator_module() -> ModuleValue:
    bin_ops = {
        "add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div,
        "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow, "and_": ast.BitAnd,
        "or_": ast.BitOr, "xor": ast.BitXor, "lshift": ast.LShift, "rshift": ast.RShift,
    }  # fmt: skip
    cmp_ops = {
        "eq": ast.Eq,
        "ne": ast.NotEq,
        "lt": ast.Lt,
        "le": ast.LtE,
        "gt": ast.Gt,
        "ge": ast.GtE,
    }
    attrs: dict[str, object] = {}
    for name, op in bin_ops.items():
        attrs[name] = Builtin(
            f"operator.{name}", lambda ip, call, a, b, op=op: ip.binop(op(), a, b)
        )
    for name, op in cmp_ops.items():
        attrs[name] = Builtin(
            f"operator.{name}", lambda ip, call, a, b, op=op: ip.compare(op(), a, b)
        )
    attrs["neg"] = Builtin("operator.neg", lambda ip, call, a: ip.binop(ast.Mult(), a, -1))
    attrs["pos"] = Builtin("operator.pos", lambda ip, call, a: a)
    attrs["not_"] = Builtin("operator.not_", lambda ip, call, a: not ip.truth(a))
    attrs["truth"] = Builtin("operator.truth", lambda ip, call, a: ip.truth(a))
    attrs["getitem"] = Builtin("operator.getitem", lambda ip, call, a, b: ip.getitem(a, b))

    def itemgetter(ip, call, *keys):
        def get(ip_, call_, obj):
            vals = tuple(ip.getitem(obj, k) for k in keys)
            return vals[0] if len(vals) == 1 else vals

        return Builtin("operator.itemgetter", get)

    def attrgetter(ip, call, *names):
        def get(ip_, call_, obj):
            vals = tuple(ip.getattr(obj, n) for n in names)
            return vals[0] if len(vals) == 1 else vals

        return Builtin("operator.attrgetter", get)

    attrs["itemgetter"] = Builtin("operator.itemgetter", itemgetter)
    attrs["attrgetter"] = Builtin("operator.attrgetter", attrgetter)
    return ModuleValue("operator", attrs)


def _typing_module() -> ModuleValue:
    names = (
        "Any", "Optional", "Union", "Tuple", "List", "Dict", "Callable", "Sequence", "ClassVar",
        "Literal", "Iterable", "Type", "Mapping", "Final",
    )  # fmt: skip
    attrs: dict[str, object] = {n: TypingMarker(n) for n in names}
    attrs["TYPE_CHECKING"] = False
    return ModuleValue("typing", attrs)


def known_modules() -> dict[str, ModuleValue]:
    """The standard modules a kernel may import (the NKI modules come from the language)."""
    enum_base = EnumBase()
    mods = {
        "math": _math_module(),
        "numpy": _numpy_module(),
        "enum": ModuleValue(
            "enum",
            {
                "Enum": enum_base,
                "IntEnum": EnumBase("IntEnum"),
                "auto": Builtin("enum.auto", lambda ip, call: EnumAuto()),
            },
        ),
        "dataclasses": ModuleValue(
            "dataclasses",
            {
                "dataclass": Builtin("dataclass", _dataclass),
                "field": Builtin("dataclasses.field", _field),
                "replace": Builtin("dataclasses.replace", _replace),
                "asdict": Builtin("dataclasses.asdict", _asdict),
            },
        ),
        "functools": ModuleValue(
            "functools",
            {
                "reduce": Builtin("functools.reduce", _reduce),
                "partial": Builtin("functools.partial", _partial),
                "lru_cache": Builtin("functools.lru_cache", _identity_decorator),
                "cache": Builtin("functools.cache", _identity_decorator),
            },
        ),
        "operator": _operator_module(),
        "__future__": ModuleValue("__future__", {"annotations": True}),
        "typing": _typing_module(),
        **host_modules(),
    }
    return mods
