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
from dataclasses import dataclass, field

from ..ir.core import Loc
from . import nki_api
from .loader import kernels_in
from .tensors import TensorView
from .values import Builtin, ModuleValue, NlOp, UserError

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
class Rules:
    """The language rules that differ between versions and dialects."""

    #: Python constructs outside the kernel subset, with the hint shown when one is used.
    unsupported_syntax: dict[type, str] = field(default_factory=dict)
    #: `is` / `is not` only against None (elsewhere: compare with == / !=).
    is_only_against_none: bool = True
    #: dict keys must be strings.
    string_dict_keys: bool = True


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

    def __repr__(self) -> str:
        return f"<language {self.name}>"

    def kernels_in(self, tree: ast.Module, file: str) -> list[tuple[str, Loc]]:
        """The kernels a parsed file defines, by name, with the span of each name."""
        return kernels_in(tree, file, self.package, self.kernel_decorators)

    # module surfaces ---------------------------------------------------------------------------

    def modules(self) -> dict[str, ModuleValue]:
        """Fresh module values for every module of the tables; a module's submodules in the
        tables (`nki.language` of `nki`) are also its attributes."""
        mods = {
            module: ModuleValue(
                module, {n: e.binding for n, e in table.items() if e.binding is not None}
            )
            for module, table in self.apis.items()
        }
        for module, value in mods.items():
            parent, _, attr = module.rpartition(".")
            if parent in mods:
                mods[parent].attrs[attr] = value
        return mods

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
        from .values import MISSING

        return MISSING

    def binop(self, ip, symbol: str, a, b, call):
        """`a <symbol> b` when the language gives it a meaning of its own; MISSING otherwise."""
        from .values import MISSING

        return MISSING

    @staticmethod
    def selected_by(tree: ast.Module) -> bool:
        """Whether a file's imports select this dialect (Beta 1 is chosen by its imports)."""
        return False

    def attribute(self, ip, obj, name: str):
        """Attributes of NKI values (tensor metadata and views, enum members, buffers);
        MISSING when `obj` is not an NKI value or has no such attribute."""
        if isinstance(obj, TensorView):
            return nki_api.tensor_attribute(ip, obj, name)
        return nki_api.constant_attribute(ip, obj, name)

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
