"""A language version: the API tables and rule flags that make one NKI version (or dialect) out
of the shared interpreter core (`specialiser.py`).

Every name of every NKI module is one `ApiEntry`: the value kernels get (`binding`), or, for a
name kernels may not use, the version that removed it and its replacement, or the fact that
nkic does not implement it yet. `Rules` holds the language rules that differ between versions.
A new version is a new table (usually an edit of the previous one, see `languages/`); a dialect
with different call semantics subclasses `Language` and overrides `call_api`."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..ir.core import Loc
from . import nki_api
from .loader import kernels_in
from .nl_grids import NkiGrid, norm_key
from .nl_grids import attribute as grid_attribute
from .tensors import TensorView
from .values import MISSING, Builtin, ModuleValue, NlOp, UserError

#: How the language names its modules in messages (`nl.arange`, `nisa.dma_copy`).
SHORT_NAMES = {"nki.language": "nl", "nki.isa": "nisa"}


@dataclass(frozen=True)
class ApiEntry:
    """One name of an NKI module in one language version.

    `binding` is the value kernels get; None when the name cannot be used, because it was
    removed (`removed_in`: the version that removed it) or is not implemented by nkic
    (`unsupported`). `replacement` says what to use instead; `deprecated_since` marks a name
    that still works but is on its way out."""

    binding: object = None
    removed_in: str | None = None
    replacement: str | None = None
    deprecated_since: str | None = None
    unsupported: bool = False


@dataclass(frozen=True)
class ModuleRef:
    """A binding that is the module value of another table (`nl.tile_size` in `nl`)."""

    module: str


@dataclass(frozen=True)
class Rules:
    """The language rules that differ between versions and dialects."""

    #: Python constructs outside the kernel subset, with the hint shown when one is used.
    unsupported_syntax: dict[type, str] = field(default_factory=dict)
    #: `is` / `is not` only against None (elsewhere: compare with == / !=).
    is_only_against_none: bool = True
    #: dict keys must be strings.
    string_dict_keys: bool = True
    #: A dependency between iterations of an `nl.affine_range` loop: "warning" where the loop
    #: runs its iterations in order (NKI 0.3 and later: a plain loop), "error" where they may
    #: run in any order (Beta 1).
    affine_dependency: str = "warning"
    #: Calling an `@nki.jit` kernel from a kernel: "error", or "warning" where the kernel is
    #: inlined like a helper function (the NKI Library relies on it).
    nested_kernel_call: str = "warning"
    #: quantize_mx's group scale: "ocp", 2^(floor(log2(amax)) - emax) as in the OCP MX sample
    #: algorithm (up to NKI 0.4), or "doubled", twice that (NKI 0.5's rounding-bias fix).
    mx_scale: str = "ocp"
    #: `t[key] += x` on a tile: `t[key] = t[key] + x` (Beta 1's tile operators).
    tile_augmented_assignment: bool = False
    #: A tensor where Python wants a truth value (`if t:`, `t and x`, `not t`, `assert t`):
    #: "error" where the kernel subset rejects it, "object" where the kernel is traced as
    #: Python (NKI 0.7) and a tensor is an object without `__bool__`, always true (a warning).
    tensor_truth: str = "error"
    #: A kernel may return a list of tensors as well as a tuple (NKI 0.7 traces the kernel as
    #: Python and takes its outputs from whichever sequence it returns).
    list_returns: bool = False
    #: `with` over any object with `__enter__`/`__exit__` (NKI 0.7 runs the kernel as Python);
    #: otherwise only `with nl.no_reorder():`.
    python_with: bool = False
    #: The buffers a kernel's returned tensors may live in (Beta 1 also accepted `nl.hbm`).
    output_buffers: tuple[str, ...] = ("shared_hbm",)
    #: `nl.shared_hbm` tensors only at the kernel's top level, not under an `if` / `else` or
    #: in a called function (Beta 1; loops are checked for every version on the IR)
    shared_hbm_top_level: bool = False
    #: An `if` / `else` / `for` block is the scope of the tensors it defines (Beta 1,
    #: `beta1_scopes.py`).
    block_scoped_tensors: bool = False
    #: `range` / `nl.static_range` / `nl.range` loops are kept as one sequential loop where
    #: that is provably identical to unrolling them (Beta 1 always unrolls them).
    symbolic_range: bool = True


class Language:
    """One language version: module tables, removed call keywords, lowerings and rules."""

    def __init__(
        self,
        name: str,
        version: str,
        apis: dict[str, dict[str, ApiEntry]],
        *,
        removed_keywords: dict[str, str],
        lowerings: dict[str, Callable],
        rules: Rules,
        package: str = "nki",
        kernel_decorators: frozenset[str] = frozenset({"jit"}),
    ):
        self.name = name
        self.version = version
        self.apis = apis
        self.removed_keywords = removed_keywords
        self.lowerings = lowerings
        self.rules = rules
        self.package = package  # the root module kernels import the language from
        self.kernel_decorators = kernel_decorators  # `package.X` names that mark a kernel
        #: keywords every `nl` / `nisa` call of the language accepts (Beta 1: `mask=`)
        self.call_keywords: frozenset[str] = frozenset()
        #: the next version, derived from this one (`derive`)
        self.successor: Language | None = None

    def __repr__(self) -> str:
        return f"<language {self.name}>"

    def derive(
        self,
        name: str,
        version: str,
        *,
        added: dict[str, dict[str, object]] | None = None,
        removed: dict[str, dict[str, str | None]] | None = None,
        deprecated: dict[str, dict[str, str | None]] | None = None,
        unsupported: dict[str, dict[str, str | None]] | None = None,
        rules: dict | None = None,
        lowerings: dict[str, Callable] | None = None,
    ) -> Language:
        """The next version: this one with the names `added` (module → name → binding), the
        names `removed` in it (module → name → replacement), the names `deprecated` in it, the
        new names nkic does not implement (`unsupported`), the rule flags changed by `rules`
        and the `nl` operators whose lowering changed (`lowerings`)."""
        apis = {module: dict(table) for module, table in self.apis.items()}
        for module, names in (added or {}).items():
            for n, binding in names.items():
                apis[module][n] = ApiEntry(binding)
        for module, names in (removed or {}).items():
            for n, alt in names.items():
                apis[module][n] = ApiEntry(removed_in=version, replacement=alt)
        for module, names in (deprecated or {}).items():
            for n, alt in names.items():
                apis[module][n] = replace(
                    apis[module][n], deprecated_since=version, replacement=alt
                )
        for module, names in (unsupported or {}).items():
            for n, alt in names.items():
                apis[module][n] = ApiEntry(unsupported=True, replacement=alt)
        derived = Language(
            name,
            version,
            apis,
            removed_keywords=self.removed_keywords,
            lowerings={**self.lowerings, **(lowerings or {})},
            rules=replace(self.rules, **(rules or {})),
            package=self.package,
            kernel_decorators=self.kernel_decorators,
        )
        if self.successor is None and version != self.version:
            self.successor = derived
        return derived

    def kernels_in(self, tree: ast.Module, file: str) -> list[tuple[str, Loc]]:
        """The kernels a parsed file defines, by name, with the span of each name."""
        return kernels_in(tree, file, self.package, self.kernel_decorators)

    # module surfaces ---------------------------------------------------------------------------

    def modules(self) -> dict[str, ModuleValue]:
        """Fresh values of the modules kernels can import (`nki`, `nki.language`, …). A
        module's submodules in the tables (`nki.language` of `nki`) are also its attributes;
        a `ModuleRef` binding is the value of another table (`nl.tile_size`), which is not
        importable itself."""
        values = {
            module: ModuleValue(
                module, {n: e.binding for n, e in table.items() if e.binding is not None}
            )
            for module, table in self.apis.items()
        }
        for value in values.values():
            for n, b in value.attrs.items():
                if isinstance(b, ModuleRef):
                    value.attrs[n] = values[b.module]
        for module, value in values.items():
            parent, _, attr = module.rpartition(".")
            if parent in values:
                values[parent].attrs[attr] = value
        referenced = {b.module for t in self.apis.values() for e in t.values()
                      if isinstance(b := e.binding, ModuleRef)}  # fmt: skip
        return {m: v for m, v in values.items() if m not in referenced}

    def unsupported_message(self, module: str, name: str) -> str | None:
        """Why `module.name` cannot be used (removed, or not implemented), or None."""
        entry = self.apis.get(module, {}).get(name)
        if entry is None or entry.binding is not None:
            return None
        full = f"{SHORT_NAMES.get(module, module)}.{name}"
        alt = f"; use {entry.replacement}" if entry.replacement else ""
        if entry.removed_in is not None:
            return f"{full} was removed in NKI {entry.removed_in}{alt}"
        return f"{full} is not supported by nkic yet{alt}"

    def added_in(self, module: str, name: str) -> str | None:
        """The first later `nki.*` version that has `module.name` (bound, or named as not
        implemented by nkic), which this one lacks."""
        if self.apis.get(module, {}).get(name) is not None:
            return None
        later = self.successor
        while later is not None:
            entry = later.apis.get(module, {}).get(name)
            if entry is not None and entry.removed_in is None:
                return later.version
            later = later.successor
        return None

    def is_removed(self, module: str, name: str) -> bool:
        """True when this version removed `module.name` (NKI itself rejects it)."""
        entry = self.apis.get(module, {}).get(name)
        return entry is not None and entry.removed_in is not None

    def deprecation(self, module: str, name: str) -> tuple[str, str] | None:
        """The warning (message, hint) for a deprecated `module.name`, or None."""
        entry = self.apis.get(module, {}).get(name)
        if entry is None or entry.deprecated_since is None:
            return None
        full = f"{SHORT_NAMES.get(module, module)}.{name}"
        message = f"{full} is deprecated since NKI {entry.deprecated_since}"
        if entry.replacement:
            return message, f"use {entry.replacement}"
        return message, "it still works in this version but may be removed in a later one"

    def isa_keywords(self, name: str) -> list[str]:
        """The keywords a `nisa.<name>` call accepts."""
        from ..ir.isa import INSTRUCTIONS

        return [p.name for p in INSTRUCTIONS[name].params]

    def keyword_hint(self, keyword: str, names: list[str]) -> str:
        """The hint for an unexpected keyword `keyword` of a `nisa` call taking `names`."""
        if keyword in self.removed_keywords:
            return self.removed_keywords[keyword]
        close = difflib.get_close_matches(keyword, names, n=1)
        if close:
            return f"did you mean '{close[0]}'?"
        return "accepted keywords: " + ", ".join(n for n in names)

    # values ------------------------------------------------------------------------------------

    def subscript(self, ip, obj, key):
        """`obj[key]` when the language gives it a meaning of its own; MISSING otherwise."""

        if isinstance(obj, NkiGrid):
            return obj.index(ip, norm_key(key))
        return MISSING

    def binop(self, ip, symbol: str, a, b, call, inplace: bool = False):
        """`a <symbol> b` (`a <symbol>= b` when `inplace`) when the language gives it a meaning
        of its own; MISSING otherwise."""

        return MISSING

    def is_launch_entry_point(self, value) -> bool:
        """Whether `value` is a kernel decorator whose arguments only configure how the kernel
        is launched (Beta 1's `nki.profile(working_directory=...)`): they are not evaluated."""
        return False

    @staticmethod
    def selected_by(tree: ast.Module) -> bool:
        """Whether a file's imports select this dialect (Beta 1 is chosen by its imports)."""
        return False

    def attribute(self, ip, obj, name: str):
        """Attributes of NKI values (tensor metadata and views, enum members, buffers);
        MISSING when `obj` is not an NKI value or has no such attribute."""

        if isinstance(obj, TensorView):
            if name == "data" and self.has("nki.language", "tiles"):
                return obj  # NKI 0.7: a tensor is its own operand, as a grid's .data is
            return nki_api.tensor_attribute(ip, obj, name)
        if isinstance(obj, NkiGrid):
            found = grid_attribute(ip, obj, name)
            return MISSING if found is None else found
        return nki_api.constant_attribute(ip, obj, name)

    def has(self, module: str, name: str) -> bool:
        """Whether this version binds `module.name` (it exists and nkic implements it)."""
        entry = self.apis.get(module, {}).get(name)
        return entry is not None and entry.binding is not None

    def intercept_call(self, ip, fn, args: list, kwargs: dict, call):
        """A dialect's own handling of a call of an `nl` / `nisa` function (Beta 1's `mask=`);
        MISSING to call it as usual."""

        return MISSING

    def split_instruction(self, name: str, operands: dict, tiles: tuple[str, ...]) -> list:
        """The operands of the instructions one `nisa.<name>` call becomes (Beta 1 splits
        index grids of more dimensions than an access pattern has); `tiles` names its tile
        operands."""
        return [operands]

    def bind_name(self, ip, name: str, value):
        """The value `name = value` binds: `value` itself, unless the dialect completes it
        there (Beta 1 names the blocks of a tensor, and reduces into the tile `name` holds)."""
        return value

    def store_into(self, ip, dst: TensorView, value, call) -> None:
        """`t[...] = value`: a copy of a tile or a fill with a constant."""
        nki_api.store_into(ip, dst, value, call)

    def call_value(self, ip, fn, args: list, kwargs: dict, call):
        """Calling a value that is not a function in Python's sense but is in the dialect
        (Beta 1's `np.float32(0.5)`); MISSING when it is not callable."""

        return MISSING

    def call_api(self, ip, fn, args: list, kwargs: dict, call):
        """Call a `nisa` instruction or an `nl` operator (an `NlOp`, which may have a
        lowering: `nl.exp(x)`)."""
        if isinstance(fn, NlOp):
            lowering = self.lowerings.get(fn.name)
            if lowering is None:
                raise UserError(
                    "err_unsupported_api",
                    f"nl.{fn.name}(...) is not supported by nkic yet (nl.{fn.name} is accepted "
                    "as an op= value of nki.isa instructions)",
                    call.node,
                    "use the nki.isa instruction directly, e.g. "
                    f"nisa.tensor_tensor(dst, a, b, op=nl.{fn.name})",
                )
            return ip.call_builtin(Builtin(f"nl.{fn.name}", lowering, True), args, kwargs, call)
        return nki_api.bind_isa(ip, fn.name, args, kwargs, call)
