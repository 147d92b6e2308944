"""Kernel files and helper modules: parsing, finding `@nki.jit` kernels, and resolving imports
from the kernel file's directory, its package root and sys.path (no Python import machinery)."""

from __future__ import annotations

import ast
import contextlib
import os
import site
import sys
import sysconfig

import tomllib

from ..ir.core import Loc
from .values import SourceModule, UserError

#: Modules whose decorators and wrappers mark kernels in some NKI version or dialect.
NKI_PACKAGES = ("nki", "neuronxcc", "neuronxcc.nki", "torch_neuronx")
#: The last name of a decorator or wrapper that marks a kernel in some NKI version or dialect
#: (`nki.compiler.psum.alloc(f)` wraps an allocation function, not a kernel).
ENTRY_POINT_NAMES = frozenset(
    {"jit", "nki_jit", "baremetal", "benchmark", "simulate_kernel", "trace", "profile"}
)
#: Kernel decorators a package exports under another package's name (Beta 1's
#: `from torch_neuronx import nki_jit`).
FOREIGN_DECORATORS = {
    package: {"torch_neuronx": frozenset({"nki_jit"})} for package in ("nki", "neuronxcc.nki")
}


def _is_jit_decorator(
    dec: ast.AST, jit_names: set[str], nki_names: set[str], decorators: frozenset[str]
) -> bool:
    if isinstance(dec, ast.Call):
        dec = dec.func
    if isinstance(dec, ast.Name):
        return dec.id in jit_names
    if isinstance(dec, ast.Attribute) and dec.attr in decorators:
        return isinstance(dec.value, ast.Name) and dec.value.id in nki_names
    return False


def _nki_aliases(
    tree: ast.Module, package: str, decorators: frozenset[str]
) -> tuple[set[str], set[str]]:
    """Names bound to the language's package (`nki`) and to its kernel decorators (`nki.jit`)
    by the module's imports and top-level assignments (`jit = nki.jit`)."""
    nki_names, jit_names = {package}, set()
    foreign = FOREIGN_DECORATORS.get(package, {})
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name == package and a.asname:
                    nki_names.add(a.asname)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == package and not stmt.level:
            for a in stmt.names:
                if a.name in decorators:
                    jit_names.add(a.asname or a.name)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for a in stmt.names:
                if f"{stmt.module}.{a.name}" == package:  # from neuronxcc import nki
                    nki_names.add(a.asname or a.name)
                elif a.name in foreign.get(stmt.module, ()):
                    jit_names.add(a.asname or a.name)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and _is_jit_decorator(stmt.value, jit_names, nki_names, decorators)
            and not isinstance(stmt.value, ast.Call)
        ):
            jit_names.add(stmt.targets[0].id)
    return nki_names, jit_names


def _top_level_defs(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


def _wrapped(tree: ast.Module, is_wrapper) -> dict[str, ast.Call]:
    """Top-level functions passed to a wrapper call anywhere in the file (`nki.jit(f)`,
    `nki.jit(mode=...)(f)`, also inside host functions), with the call."""
    defs = _top_level_defs(tree)
    found: dict[str, ast.Call] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in defs
            and is_wrapper(node.func)
        ):
            found.setdefault(node.args[0].id, node)
    return found


def kernels_in(
    tree: ast.Module,
    file: str,
    package: str = "nki",
    decorators: frozenset[str] = frozenset({"jit"}),
) -> list[tuple[str, Loc]]:
    """Every top-level function decorated with `@nki.jit` (also through an alias: `from nki
    import jit as j`, `jit = nki.jit`) or wrapped at a call site (`nki.jit(f)`,
    `nki.jit(mode=...)(f)`), in file order; the language gives the package and decorators."""
    nki_names, jit_names = _nki_aliases(tree, package, decorators)

    def is_jit(node: ast.AST) -> bool:
        return _is_jit_decorator(node, jit_names, nki_names, decorators)

    wrapped = _wrapped(tree, is_jit)
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and (
            stmt.name in wrapped or any(is_jit(d) for d in stmt.decorator_list)
        ):
            out.append((stmt.name, def_loc(stmt, file)))
    return out


def other_kernel_forms(tree: ast.Module, kernels: list[str]) -> list[tuple[str, str]]:
    """Top-level functions, other than `kernels`, that a decorator or a wrapper call from an
    NKI package marks (`@nki.baremetal`, `@nki_jit` from torch_neuronx, `nki.benchmark(f)`):
    (name, the form, as written)."""
    roots: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name in NKI_PACKAGES:
                    roots.add(a.asname or a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module in NKI_PACKAGES:
            roots |= {a.asname or a.name for a in stmt.names if a.name != "*"}

    def from_nki(node: ast.AST) -> bool:
        last = node.func if isinstance(node, ast.Call) else node
        name = last.attr if isinstance(last, ast.Attribute) else getattr(last, "id", None)
        if name not in ENTRY_POINT_NAMES and not (isinstance(last, ast.Name) and last.id in roots):
            return False
        while isinstance(node, (ast.Call, ast.Attribute)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and node.id in roots

    out: dict[str, str] = {}
    for name, call in _wrapped(tree, from_nki).items():
        out[name] = ast.unparse(call)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            for d in stmt.decorator_list:
                if from_nki(d):
                    out.setdefault(stmt.name, f"@{ast.unparse(d)}")
    return [(n, f) for n, f in out.items() if n not in kernels]


def def_loc(node: ast.FunctionDef, file: str) -> Loc:
    """The span of a function's name in its `def` line."""
    line = node.lineno
    col = node.col_offset + 5  # after "def "
    return Loc(file, line, col, line, col + len(node.name))


def project_roots(directory: str) -> list[str]:
    """The import roots of the project holding `directory`, as an installed checkout sees them:
    the nearest ancestor with a pyproject.toml, and its package directories (setuptools
    `package-dir` and `packages.find.where`, else a `src/` folder beside it)."""
    project = directory
    while not os.path.isfile(os.path.join(project, "pyproject.toml")):
        parent = os.path.dirname(project)
        if parent == project:
            return []
        project = parent
    try:
        with open(os.path.join(project, "pyproject.toml"), "rb") as f:
            setuptools = tomllib.load(f).get("tool", {}).get("setuptools", {})
    except (OSError, tomllib.TOMLDecodeError):
        setuptools = {}
    dirs = []
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        dirs.append(package_dir[""])
    find = setuptools.get("packages", {})
    where = find.get("find", {}).get("where") if isinstance(find, dict) else None
    if isinstance(where, list):
        dirs += [w for w in where if isinstance(w, str)]
    if not dirs and os.path.isdir(os.path.join(project, "src")):
        dirs.append("src")
    roots = [project]
    for d in dirs:
        path = os.path.normpath(os.path.join(project, d))
        if path not in roots and os.path.isdir(path):
            roots.append(path)
    return roots


#: Source texts standing in for files (absolute path -> text): a path here is read from this
#: table, not from the disk (`source_overrides`).
_OVERRIDES: dict[str, str] = {}


@contextlib.contextmanager
def source_overrides(texts: dict[str, str]):
    """Compile `texts` as if each were the file at its path (which need not exist): a module
    is resolved and imports from its folder like a file there, and nothing is written."""
    texts = {os.path.abspath(p): t for p, t in texts.items()}
    _OVERRIDES.update(texts)
    try:
        yield
    finally:
        for p in texts:
            _OVERRIDES.pop(p, None)


def read_source(path: str) -> str:
    """The text of a source file (or of its stand-in, see `source_overrides`)."""
    override = _OVERRIDES.get(os.path.abspath(path))
    if override is not None:
        return override
    with open(path, encoding="utf-8") as f:
        return f.read()


#: Parsed files by (path, text), shared by the loaders of one process: an LNC=2 compile
#: specialises every module once per core, `nkic check` once per launch degree. The
#: specialiser never changes a tree.
_TREES: dict[tuple[str, str], ast.Module] = {}
_MAX_TREES = 512


class Loader:
    """Reads and parses source files (once each) and maps module names to files."""

    def __init__(self, kernel_path: str):
        self.kernel_path = os.path.abspath(kernel_path)
        self._parsed: dict[str, object] = {}
        directory = os.path.dirname(self.kernel_path)
        parts = []
        root = directory
        while os.path.isfile(os.path.join(root, "__init__.py")):
            parts.insert(0, os.path.basename(root))
            parent = os.path.dirname(root)
            if parent == root:
                break
            root = parent
        stem = os.path.splitext(os.path.basename(self.kernel_path))[0]
        self.kernel_module_name = (
            ".".join([*parts, stem]) if stem != "__init__" else ".".join(parts)
        )
        self.kernel_package = ".".join(parts)
        self.search_path = [directory, root, *project_roots(directory)]
        self.search_path += [p for p in sys.path if p]
        installed = {
            sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")
        }
        installed.update(getattr(site, "getsitepackages", list)())
        self._installed = tuple(os.path.abspath(p) + os.sep for p in installed if p)

    def parse(self, path: str):
        """(tree, text) of a file, or a UserError carrying the syntax error's location."""
        if path not in self._parsed:
            self._parsed[path] = self._parse(path)
        return self._parsed[path]

    @staticmethod
    def _parse(path: str):
        try:
            text = read_source(path)
        except UnicodeDecodeError as e:
            line = 1 + e.object[: e.start].count(b"\n")
            err = UserError(
                "err_syntax_error",
                f"the file is not valid UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start})",
                None,
                "save the kernel as UTF-8, the encoding Python source files use by default",
            )
            err.loc = Loc(path, line, 1, line, 2)
            return err
        except OSError as e:
            err = UserError(
                "err_file_not_found", f"cannot read {path}: {e.strerror}", None, "check the path"
            )
            err.loc = Loc(path, 1, 1, 1, 1)
            return err
        key = (path, text)
        tree = _TREES.get(key)
        if tree is not None:
            return tree, text
        try:
            tree = ast.parse(text, filename=path)
        except (RecursionError, MemoryError):
            err = UserError(
                "err_syntax_error",
                "the file nests expressions too deeply for the Python parser",
                None,
                "split the expression into several statements",
            )
            err.loc = Loc(path, 1, 1, 1, 2)
            return err
        except SyntaxError as e:
            line = e.lineno or 1
            col = e.offset or 1
            end_line = getattr(e, "end_lineno", None) or line
            end_col = getattr(e, "end_offset", None) or col + 1
            if end_line == line and end_col <= col:
                end_col = col + 1
            err = UserError(
                "err_syntax_error",
                f"the file is not valid Python: {e.msg}",
                None,
                "kernels must be valid Python",
            )
            err.loc = Loc(path, line, col, end_line, end_col)
            return err
        if len(_TREES) >= _MAX_TREES:
            _TREES.clear()
        _TREES[key] = tree
        return tree, text

    def absolute_name(self, module: str | None, level: int, current: SourceModule) -> str | None:
        """The absolute module name of `from <level dots><module> import ...` in `current`."""
        if level == 0:
            return module
        parts = current.package.split(".") if current.package else []
        if level - 1 >= len(parts):
            return None
        base = parts[: len(parts) - (level - 1)]
        if module:
            base.append(module)
        return ".".join(base) if base else None

    def find_module(self, name: str, current: SourceModule) -> str | None:
        rel = name.split(".")
        for base in self.search_path:
            stem = os.path.join(base, *rel)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                if os.path.isfile(candidate):
                    return os.path.abspath(candidate)
        return None

    def is_installed(self, path: str) -> bool:
        """Whether `path` belongs to the standard library or an installed package (modules the
        specialiser does not read: kernels only use the helper modules of their project)."""
        return path.startswith(self._installed)
