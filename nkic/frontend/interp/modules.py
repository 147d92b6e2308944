"""Imports: the NKI and standard modules of the language, helper modules read from source
(evaluated once each, never executed by Python), and opaque installed packages."""

from __future__ import annotations

import ast
import difflib

from ..values import (
    Deferred,
    ModuleValue,
    OpaqueModule,
    Poison,
    Scope,
    SourceModule,
    UserError,
)
from .state import Frame, bound_names

_HOST_ONLY = ("nkic", "nkirt")  # the compiler itself, imported by host code in kernel files

#: Beta 1 modules whose names mean the same in the current language (tensor annotations), so a
#: current-dialect file may import them, as NKI installs that ship both namespaces accept.
_SAME_MEANING = {"neuronxcc.nki.typing": "nki.typing"}


class Modules:
    """Part of the `Specialiser`: imports and the evaluation of helper modules."""

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            module = self.import_module(alias.name, node)
            if alias.asname:
                self.store_name(alias.asname, module)
            else:
                top = alias.name.split(".")[0]
                self.store_name(top, self.import_module(top, node))

    def visit_ImportFrom(self, node: ast.ImportFrom):
        name = self.loader.absolute_name(node.module, node.level, self.module)
        if name is None:
            err = UserError(
                "err_import_error",
                "attempted relative import beyond the top-level package",
                node,
            )
            err.certain = True  # Python fails too
            raise err
        module = self.import_module(name, node)
        if isinstance(module, OpaqueModule):
            if node.level:
                raise UserError("err_import_error", f"no module named '{name}'", node)
            for alias in node.names:
                if alias.name != "*":
                    self.store_name(
                        alias.asname or alias.name,
                        OpaqueModule(f"{name}.{alias.name}", module.found),
                    )
            return
        for alias in node.names:
            if alias.name == "*":
                exported = module.attrs.get("__all__")
                names = (
                    list(exported)
                    if isinstance(exported, (list, tuple))
                    else [n for n in module.attrs if not n.startswith("_")]
                )
                for n in names:
                    self.store_name(n, module.attrs[n])
                continue
            if alias.name in module.attrs:
                value = module.attrs[alias.name]
                if module.strict:
                    self.warn_deprecated(module.name, alias.name, node)
            elif module.strict:
                # `from nki.language import arange`: reported as `nl.arange` would be
                value = self.getattr(module, alias.name, node)
            else:
                try:
                    value = self.import_module(f"{name}.{alias.name}", node)
                except UserError:
                    err = UserError(
                        "err_import_error",
                        f"cannot import name '{alias.name}' from '{name}'",
                        node,
                        self.suggest(alias.name, module.attrs),
                    )
                    err.certain = True  # Python fails too
                    raise err from None
            self.store_name(alias.asname or alias.name, value)

    def exec_host_stmt(self, stmt: ast.stmt) -> None:
        """One module-level statement: host code, which real NKI runs with Python. What nkic
        cannot evaluate there is not reported; the names the statement failed to bind become
        `Deferred`, an error only where kernel code uses them."""
        mark = len(self.host_errors)
        self.exec_stmt(stmt)
        if len(self.host_errors) == mark:
            return
        err = self.host_errors[mark]
        del self.host_errors[mark:]
        for name in bound_names(stmt):
            if isinstance(self.scope.vars.get(name), Poison):
                self.scope.vars[name] = Deferred(name, err)

    def visit_Try(self, node: ast.Try):
        """`try:` in module-level code (`try: import x except ImportError: ...`): the body, its
        `else` and `finally` run; the handlers, for errors Python would raise, do not. Kernel
        code cannot catch errors (the subset rule)."""
        if not self.host_code or self.in_kernel:
            raise self.unsupported(node)
        self.exec_block(node.body)
        self.exec_block(node.orelse)
        self.exec_block(node.finalbody)

    def import_module(self, name: str, node: ast.AST) -> ModuleValue:
        if name in self.modules:
            return self.modules[name]
        same = _SAME_MEANING.get(name)
        if name not in self.known_modules and same in self.known_modules:
            return self.modules.setdefault(name, self.known_modules[same])
        if (
            name == "neuronxcc" or name.startswith("neuronxcc.")
        ) and name not in self.known_modules:
            err = UserError(
                "err_unsupported_api",
                f"the Beta 1 namespace '{name}' cannot be mixed with the current 'nki' "
                "modules in one file",
                node,
                "write the file in one dialect: import nki, nki.language as nl, nki.isa as nisa "
                "(or only neuronxcc.nki for a Beta 1 kernel)",
            )
            err.certain = True  # a whole file in another dialect: say so at its import
            raise err
        if name in self.known_modules:
            mod = self.known_modules[name]
            self.modules[name] = mod
            return mod
        parent = None
        if "." in name:
            parent = self.import_module(name.rsplit(".", 1)[0], node)
            if isinstance(parent, OpaqueModule):
                return OpaqueModule(name, parent.found)
            if name.split(".")[0] == self.language.package:
                sub = name.rsplit(".", 1)[1]
                known = [*parent.attrs, *self.language.apis.get(parent.name, {})]
                if sub not in known and not difflib.get_close_matches(sub, known, 1, 0.8):
                    # a module of the NKI package outside its API (`nki.compiler`, imported by
                    # test harnesses), not a misspelt one: opaque, an error only where
                    # evaluated code uses it
                    return OpaqueModule(name, True)
                # `import nki.collectives`: a submodule the language lacks or nkic does not
                # implement is diagnosed as `nki.collectives` would be
                self.getattr(parent, sub, node)
        path = self.loader.find_module(name, self.module)
        if path is None or self.loader.is_installed(path) or name.split(".")[0] in _HOST_ONLY:
            return OpaqueModule(name, path is not None)
        mod = self.load_source_module(name, path, node)
        if parent is not None and parent.source is not None:
            parent.attrs.setdefault(name.rsplit(".", 1)[1], mod)
        return mod

    def load_source_module(self, name: str, path: str, node: ast.AST | None) -> ModuleValue:
        if path in self.module_by_file:
            src = self.module_by_file[path]
            return self.modules.setdefault(name, ModuleValue(name, src.scope.vars, False, src))
        parsed = self.loader.parse(path)
        if isinstance(parsed, UserError):
            raise parsed
        tree, text = parsed
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        src = SourceModule(name, path, package, tree, Scope(None, "module"), text.splitlines())
        src.scope.vars["__name__"] = name
        src.scope.vars["__file__"] = path
        mod = ModuleValue(name, src.scope.vars, False, src)
        self.modules[name] = mod
        self.module_by_file[path] = src
        saved_stack = self.call_stack
        self.call_stack = [self.loc(node, with_stack=False)] if node is not None else []
        self.frames.append(Frame(src.scope, src))
        saved_kernel, saved_attempts = self.in_kernel, self.attempts
        self.in_kernel = False
        self.attempts = []  # a module's body never depends on the loop that imports it
        self.host_code += 1
        try:
            for stmt in tree.body:
                self.exec_host_stmt(stmt)
        finally:
            self.host_code -= 1
            self.frames.pop()
            self.call_stack = saved_stack
            self.in_kernel, self.attempts = saved_kernel, saved_attempts
        return mod
