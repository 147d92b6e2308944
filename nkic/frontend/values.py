"""The compile-time value model of the specialiser: scopes, functions, classes, enums, modules,
NKI constants and tensor views. Plain Python values stand for NKI ints, floats, bools, strings,
None, tuples, lists and dicts; an `Affine` stands for an integer that depends on the induction
variable of a symbolic loop."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..ir.affine import Affine

MISSING = object()


# ---------------------------------------------------------------------------------------------
# signals


class UserError(Exception):
    """A mistake in the kernel: becomes one Diagnostic at `node` (filled in by the visitor)."""

    def __init__(
        self, code: str, message: str, node: ast.AST | None = None, hint: str | None = None
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.node = node
        self.hint = hint
        self.related: tuple = ()  # diagnostics.Related locations that explain it
        #: NKI itself fails here too (not only nkic), so it is reported even in module-level
        #: host code, whose other errors are deferred to the kernel code that needs the value
        self.certain = code == "err_nki_api_outside_of_nki_kernel"
        #: Specialisation cannot meaningfully go on past it (the loop budget is spent): the
        #: kernel stops here like at a failed `assert`, so no follow-on error is reported
        self.ends_kernel = False


class PoisonError(Exception):
    """An operation on a value whose computation already failed: skipped without a report."""


class SymbolicAbort(Exception):
    """A symbolic loop attempt must be discarded and the loop unrolled (`target` names it)."""

    def __init__(self, target: object, reason: str):
        super().__init__(reason)
        self.target = target
        self.reason = reason
        #: loop values where a piece of the loop starts, when splitting it there would let
        #: each piece stay symbolic (`Loops.run_symbolic`)
        self.split: list | None = None


class ReturnSignal(Exception):
    def __init__(self, value: object):
        self.value = value


class BreakSignal(Exception):
    pass


class ContinueSignal(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# environment


class Poison:
    """The value of a name whose defining statement failed; uses are silently skipped."""

    def __repr__(self) -> str:
        return "<error>"


POISON = Poison()


class Deferred:
    """The value of a name bound by module-level (host) code that nkic could not evaluate
    (`logger = logging.getLogger(...)`, `os.environ[...]`, `np.finfo(...)`): nothing is
    reported until kernel code uses the name; then `error`, with its location as related."""

    def __init__(self, name: str, error: UserError):
        self.name = name
        self.error = error

    def __repr__(self) -> str:
        return f"<not evaluated: {self.name}>"

    def use_error(self, node) -> UserError:
        from ..diagnostics import Related

        err = UserError(
            self.error.code,
            f"'{self.name}' is bound by module-level code that nkic could not evaluate: "
            f"{self.error.message}",
            node,
            self.error.hint
            or "kernels may use only what nkic can evaluate; pass the value as an argument",
        )
        err.related = (Related(self.error.loc, "the module-level code nkic could not evaluate"),)
        return err


class Scope:
    """Variables of a module, function call, class body or comprehension."""

    __slots__ = ("vars", "parent", "kind")

    def __init__(self, parent: Scope | None, kind: str = "function"):
        self.vars: dict[str, object] = {}
        self.parent = parent
        self.kind = kind

    def find(self, name: str) -> Scope | None:
        s: Scope | None = self
        while s is not None:
            if name in s.vars:
                return s
            s = s.parent
        return None


class Redirect:
    """What a function's scope holds for a name it declared `global` or `nonlocal` (NKI 0.7,
    where the kernel is Python): reads and writes of the name go to `scope`, the module's or
    the enclosing function's."""

    __slots__ = ("scope",)

    def __init__(self, scope: Scope):
        self.scope = scope


@dataclass
class SourceModule:
    """A Python module evaluated by the specialiser (the kernel file or a helper it imports)."""

    name: str
    file: str
    package: str
    tree: ast.Module
    scope: Scope
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Escaped:
    """A value bound inside a symbolic loop body that has no single value after the loop (a
    tile allocated per iteration, a container holding the induction variable). Reading it
    restarts specialisation with that loop unrolled (`loop` identifies it) — except for a tile
    allocated in an `nl.affine_range` body (`affine_tile`): the iterations of a parallel loop
    have no "last" one, so that read is `err_local_variable_used_out_of_scope`."""

    name: str
    loop: tuple
    affine_tile: bool = False


class KernelAbort(Exception):
    """A failed `assert` or a `raise` in the kernel (already reported): Python would not run
    past it, so specialisation of the kernel stops there, and nothing after it is reported."""


class RestartUnrolled(Exception):
    """Specialisation must start over with the loop `loop` (file, line, column) unrolled."""

    def __init__(self, loop: tuple):
        super().__init__(loop)
        self.loop = loop


# ---------------------------------------------------------------------------------------------
# functions and classes


class Function:
    """A user function or lambda, closed over the scope it was defined in."""

    def __init__(self, name: str, node: ast.AST, scope: Scope, module: SourceModule):
        self.name = name
        self.node = node
        self.scope = scope
        self.module = module
        self.defaults: list[object] = []
        self.kw_defaults: dict[str, object] = {}
        self.is_jit = False
        self.owner: NkiClass | None = None
        self.is_lambda = isinstance(node, ast.Lambda)

    def __repr__(self) -> str:
        return f"<function {self.name}>"


@dataclass(frozen=True)
class BoundMethod:
    func: object
    self_value: object


@dataclass(frozen=True)
class StaticMethod:
    func: object


@dataclass(frozen=True)
class ClassMethod:
    func: object


@dataclass(frozen=True)
class Property:
    fget: object
    fset: object = None


@dataclass
class FieldSpec:
    """A dataclass / NKIObject field: its name and default (or a default factory)."""

    name: str
    default: object = MISSING
    factory: object = MISSING


@dataclass(frozen=True)
class FieldDefault:
    """The value of `dataclasses.field(...)` in a class body."""

    default: object = MISSING
    factory: object = MISSING


class NkiClass:
    """A user class: an `nl.NKIObject` subclass, a dataclass or an `enum.Enum`."""

    def __init__(self, name: str, bases: tuple[NkiClass, ...], module: SourceModule | None):
        self.name = name
        self.bases = bases
        self.module = module
        self.attrs: dict[str, object] = {}
        self.fields: list[FieldSpec] = []
        self.is_dataclass = False
        #: derives from `nl.NKIObject`: NKI synthesises its `__init__`, with or without
        #: `@dataclass`, and a field without default that no argument gives is None
        self.nki_object = any(b.nki_object for b in bases)
        self.frozen = False
        self.is_enum = any(b.is_enum for b in bases)
        self.int_enum = any(b.int_enum for b in bases)  # members equal their int values
        self.members: dict[str, EnumMember] = {}
        self._mro: tuple[NkiClass, ...] | None = None

    def mro(self) -> tuple[NkiClass, ...]:
        """The class, then its bases' classes in order (computed once: bases never change)."""
        if self._mro is None:
            out = [self]
            for b in self.bases:
                out += [c for c in b.mro() if c not in out]
            self._mro = tuple(out)
        return self._mro

    def lookup(self, name: str) -> object:
        for c in self.mro():
            if name in c.attrs:
                return c.attrs[name]
        return MISSING

    def is_subclass_of(self, other: NkiClass) -> bool:
        return other in self.mro()

    def __repr__(self) -> str:
        return f"<class {self.name}>"


class Instance:
    """An instance of a user class; equality is structural, like a dataclass."""

    def __init__(self, cls: NkiClass):
        self.cls = cls
        self.attrs: dict[str, object] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instance) and other.cls is self.cls and other.attrs == self.attrs

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"{self.cls.name}({inner})"


class EnumMember:
    """A member of a user `enum.Enum`; only `==`/`!=` are defined on it."""

    def __init__(self, cls: NkiClass, name: str, value: object):
        self.cls = cls
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"{self.cls.name}.{self.name}"


@dataclass(frozen=True)
class NkiObjectBase:
    """`nl.NKIObject`, the base of user classes."""

    name: str = "NKIObject"


@dataclass(frozen=True)
class EnumBase:
    """`enum.Enum` or `enum.IntEnum` (whose members also compare equal to their int values)."""

    name: str = "Enum"


@dataclass(frozen=True)
class EnumAuto:
    """The value of `enum.auto()` in an enum body."""


class Builtin:
    """A function implemented by the specialiser: `fn(interp, call, *args, **kwargs)`."""

    def __init__(self, name: str, fn, nki_api: bool = False):
        self.name = name
        self.fn = fn
        self.nki_api = nki_api

    def __repr__(self) -> str:
        return f"<built-in {self.name}>"


@dataclass(frozen=True)
class PyType:
    """A Python type usable in `isinstance` and, when `convert` is set, as a conversion."""

    name: str
    pytypes: tuple[type, ...]
    convert: Any = None


class ModuleValue:
    """A namespace: a known module (`nl`, `nisa`, `math`, …), a helper module or `nl.tile_size`."""

    def __init__(self, name: str, attrs: dict[str, object], strict: bool = True, source=None):
        self.name = name
        self.attrs = attrs
        self.strict = strict
        self.source: SourceModule | None = source

    def __repr__(self) -> str:
        return f"<module {self.name}>"


class HostModule(ModuleValue):
    """A standard module of which nkic models the pure, deterministic part (`os`, `os.path`);
    using the rest is an error naming why nkic leaves it out (`unmodelled`)."""

    def __init__(self, name: str, attrs: dict[str, object], unmodelled: str):
        super().__init__(name, attrs, strict=False)
        self.unmodelled = unmodelled


class SuperProxy:
    """`super()` inside a method: attribute lookup starts after `owner` in the MRO."""

    def __init__(self, owner: NkiClass, obj: object):
        self.owner = owner
        self.obj = obj


@dataclass(frozen=True)
class OpaqueModule:
    """A module the specialiser does not read (not found, or installed third-party / standard
    library code such as `torch`): importing it is fine, using it in evaluated code is not."""

    name: str
    found: bool


@dataclass(frozen=True)
class TypingMarker:
    """An object of the `typing` module; only meaningful in annotations."""

    name: str


# ---------------------------------------------------------------------------------------------
# NKI constants


@dataclass(frozen=True)
class BufferValue:
    """`nl.sbuf`, `nl.psum`, `nl.hbm` / `nl.private_hbm`, `nl.shared_hbm`."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class NlOp:
    """An ALU operator or activation function of `nl` (`nl.add`, `nl.exp`) used as a value."""

    name: str

    def __repr__(self) -> str:
        return f"nl.{self.name}"


@dataclass(frozen=True)
class IsaEnum:
    """An enumeration of `nki.isa` (`nisa.engine`, `nisa.reduce_cmd`, …)."""

    name: str
    members: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class IsaEnumMember:
    enum: str
    name: str
    value: object

    def __repr__(self) -> str:
        return f"nisa.{self.enum}.{self.name}"


@dataclass(frozen=True)
class IsaInstr:
    """A `nki.isa` instruction function (bound by the catalogue in `nkic.ir.isa`)."""

    name: str


class IteratorValue:
    """A Python iterator: what `iter()`, a generator function, a generator expression, `map`,
    `filter`, `zip`, `enumerate` and `reversed` give. Its items are computed when it is made
    (nkic runs a generator's body ahead of its consumer; see `Interpreter._run_generator`);
    `next()` and iteration consume them in order, as in Python."""

    def __init__(self, kind: str, items: list):
        self.kind = kind  # the Python type name: "generator", "list_iterator", "zip", ...
        self.items = items
        self.pos = 0

    def take(self, n: int | None = None) -> list:
        """The next `n` items (all that are left if None), consumed."""
        end = len(self.items) if n is None else min(len(self.items), self.pos + n)
        out = self.items[self.pos : end]
        self.pos = end
        return out


@dataclass(frozen=True)
class RangeValue:
    """`range` / `nl.static_range` / `nl.affine_range` / `nl.sequential_range` arguments."""

    kind: str  # "range" | "static" | "affine" | "sequential"
    start: int
    stop: int
    step: int

    def as_range(self) -> range:
        return range(self.start, self.stop, self.step)


@dataclass(frozen=True)
class DynSlice:
    """`nl.ds(start, size)`: the slice `start:start+size`; `start` may be symbolic."""

    start: object
    size: int


@dataclass(frozen=True)
class TensorTypeAnnotation:
    """`nt.tensor[...]` in an annotation: a shape and an optional dtype."""

    shape: tuple[int, ...]
    dtype: str | None


@dataclass(frozen=True)
class ContextManagerValue:
    """The value of `nl.no_reorder()`."""

    name: str


def is_symbolic(v: object) -> bool:
    return isinstance(v, Affine) and not v.is_const


def norm_int(v: object) -> object:
    """Collapse constant affine expressions to plain ints."""
    if isinstance(v, Affine) and v.is_const:
        return v.const
    return v


class PerTarget:
    """A module attribute whose value depends on the compilation target (`nl.tile_size`'s SBUF
    sizes): `fn(target_name)` gives it when a kernel reads the attribute."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn
