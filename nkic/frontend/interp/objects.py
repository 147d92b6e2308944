"""Python objects: classes (NKIObject, dataclasses, enums), instances, attribute and item
access."""

from __future__ import annotations

import ast

from .. import pylib
from ..beta1_mask import is_index_value
from ..host_modules import ProcessEnvironment, environment_missing
from ..tensors import TensorView, type_name
from ..values import (
    MISSING,
    BoundMethod,
    Builtin,
    ClassMethod,
    Deferred,
    EnumAuto,
    EnumBase,
    EnumMember,
    FieldDefault,
    FieldSpec,
    Function,
    HostModule,
    Instance,
    ModuleValue,
    NkiClass,
    NkiObjectBase,
    OpaqueModule,
    PerTarget,
    Poison,
    PoisonError,
    Property,
    RangeValue,
    Scope,
    StaticMethod,
    SuperProxy,
    UserError,
    norm_int,
)
from .state import CallSite, Frame, opaque_error


def _is_classvar(annotation: ast.AST) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _class_names(cls: NkiClass) -> list[str]:
    names: list[str] = []
    for c in cls.mro():
        names += list(c.attrs)
    return names


class PythonObjects:
    """Part of the `Specialiser`: classes, instances, attribute and item access."""

    def visit_ClassDef(self, node: ast.ClassDef):
        if node.keywords:
            raise self.unsupported(node.keywords[0])
        bases = []
        base_values = []
        is_enum = int_enum = False
        for b in node.bases:
            value = self.visit(b)
            base_values.append(value)
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
        cls.nki_object = cls.nki_object or any(isinstance(v, NkiObjectBase) for v in base_values)
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
            if k not in names and _is_class_default(cls, k):
                # a class attribute without annotation: NKI's synthesised __init__ takes it as
                # a field too (by keyword: it has no place among the positional fields)
                obj.attrs[k] = v
                continue
            if k not in names:
                raise UserError(
                    "err_unexpected_keyword",
                    f"{cls.name}() got an unexpected keyword argument '{k}'",
                    call.arg_node(name=k),
                    self.suggest(
                        k, names + [n for n in _class_names(cls) if _is_class_default(cls, n)]
                    ),
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
            elif cls.is_dataclass and not cls.nki_object:
                raise UserError(
                    "err_missing_argument",
                    f"{cls.name}() missing required argument '{f.name}'",
                    call.node,
                )
            else:
                obj.attrs[f.name] = None

    def getattr(self, obj, name: str, node: ast.AST | None = None):
        if type(obj) is Instance:  # the most frequent: an object's own attribute
            attrs = obj.attrs
            if name in attrs:
                return attrs[name]
        elif type(obj) is ModuleValue:
            # the next most frequent: `nl.x`, `nisa.x`, a helper module's name; the general
            # path below for the marked values
            attrs = obj.attrs
            if name in attrs:
                value = attrs[name]
                kind = type(value)
                if kind is not Poison and kind is not Deferred and kind is not PerTarget:
                    if obj.strict and self.deprecations.get((obj.name, name), True) is not None:
                        self.warn_deprecated(obj.name, name, node)
                    return value
        elif type(obj) is TensorView and self.plain_attribute:
            # the chain below finds nothing for a tensor until the language's attributes
            value = self.language.attribute(self, obj, name)
            if value is not MISSING:
                return value
        elif isinstance(obj, Poison):
            raise PoisonError()
        if isinstance(obj, OpaqueModule):
            raise opaque_error(obj, node)
        if isinstance(obj, ModuleValue):
            if name in obj.attrs:
                value = obj.attrs[name]
                if isinstance(value, Poison):
                    raise PoisonError()
                if isinstance(value, Deferred):
                    raise value.use_error(node)
                if obj.strict and self.deprecations.get((obj.name, name), True) is not None:
                    self.warn_deprecated(obj.name, name, node)
                if isinstance(value, PerTarget):
                    return value.fn(self.target)
                return value
            if obj.strict:
                hint = self.suggest(name, [k for k in obj.attrs if not k.startswith("_")])
                unsupported = self.language.unsupported_message(obj.name, name)
                if unsupported:
                    err = UserError("err_unsupported_api", unsupported, node)
                    err.certain = self.language.is_removed(obj.name, name)  # NKI fails too
                    raise err
                message = f"{obj.name} has no attribute '{name}'"
                later = self.language.added_in(obj.name, name)
                if later:
                    message += f" in NKI {self.language.version} (it is new in NKI {later})"
                    hint = f"compile as NKI {later} or later (--nki {later})"
                err = UserError("err_unknown_api", message, node, hint)
                err.certain = obj.name.split(".")[0] == self.language.package  # NKI fails too
                raise err
            if isinstance(obj, HostModule):
                raise UserError(
                    "err_import_error",
                    f"'{obj.name}.{name}' is not available in kernels: {obj.unmodelled}",
                    node,
                    "nkic evaluates host code without side effects or machine state; "
                    "pass the value to the kernel as an argument",
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
        if type(obj) is Instance:  # the most frequent: the case below without its checks
            cls = obj.cls
            if not cls.frozen and type(cls.lookup(name)) is not Property:
                self.touch(obj)
                obj.attrs[name] = value
                return
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
        if type(obj) is TensorView and self.plain_subscript:
            # the most frequent: the case below without the language hook (NkiGrid only)
            items = []
            for k in key if type(key) is tuple else (key,):
                kind = type(k)
                items.append(k if kind is int or kind is slice else self._index_item(k))
            return obj.index(tuple(items))
        if type(key) is int and (type(obj) is tuple or type(obj) is list) and self.plain_subscript:
            # the next most frequent: an item of a shape, a stride list (`_sequence_item`)
            try:
                return obj[key]
            except IndexError:
                raise UserError(
                    "err_value_error",
                    f"index {key} out of range for a sequence of length {len(obj)}",
                ) from None
        if isinstance(obj, Poison) or isinstance(key, Poison):
            raise PoisonError()
        special = self.language.subscript(self, obj, key)
        if special is not MISSING:
            return special
        if isinstance(obj, TensorView):
            items = key if isinstance(key, tuple) else (key,)
            items = tuple(self._index_item(k) for k in items)
            return obj.index(items)
        if isinstance(obj, dict):
            if not _has_key(obj, key):  # a host dict may have other keys (Enum members)
                self.check_key(key)
            if key not in obj:
                if isinstance(obj, ProcessEnvironment):
                    raise environment_missing(key)
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
        if is_index_value(obj) or getattr(obj, "is_mask", False):
            raise UserError(
                "err_cannot_assign_to_index",
                f"{'a mask' if getattr(obj, 'is_mask', False) else 'an index grid'} does not "
                "support item assignment: it stands for index values, not a tile",
                node,
                "make a tile of the index values first (y = nisa.iota(x, dtype=nl.uint32)) "
                "and assign to the tile",
            )
        special = self.language.subscript(self, obj, key)
        if isinstance(special, TensorView):  # a dialect's view (Beta 1 index grids)
            self.language.store_into(self, special, value, CallSite(node))
            return
        error = getattr(special, "error", None)
        if isinstance(error, UserError):  # a view past the tensor's end
            raise error
        if special is not MISSING:
            return special
        if isinstance(obj, TensorView):
            items = key if isinstance(key, tuple) else (key,)
            dst = obj.index(tuple(self._index_item(k) for k in items))
            self.language.store_into(self, dst, value, CallSite(node))
            return
        if isinstance(obj, dict):
            self.check_key(key)
            if isinstance(obj, ProcessEnvironment) and not (
                isinstance(key, str) and isinstance(value, str)
            ):
                raise UserError("err_type_error", "os.environ keys and values must be strings")
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


def _is_class_default(cls: NkiClass, name: str) -> bool:
    """Whether `name` is a plain value set in the body of `cls` or of a base (`x = None`)."""
    if name.startswith("__"):
        return False
    value = cls.lookup(name)
    return value is not MISSING and not isinstance(
        value, (Function, StaticMethod, ClassMethod, Property, Builtin, NkiClass)
    )


def _has_key(d: dict, key) -> bool:
    try:
        return key in d
    except TypeError:  # unhashable
        return False
