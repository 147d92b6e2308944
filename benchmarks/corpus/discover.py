"""Find the kernel files of a corpus and classify each by repository and NKI dialect.

A kernel file imports an NKI module and defines at least one kernel: a function decorated
with an NKI entry point (`nki.jit`, `nki.baremetal`, `nki_jit`, an alias of one of them, ...)
or wrapped by one at module level (`k = nki.jit(f)`). Only the source is read: nothing runs.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

REPOS = ("nki-library", "nki-samples", "aws-neuron-sdk")
CURRENT, BETA1 = "current", "beta1"

# the last component of a decorator that makes a function an NKI kernel
ENTRY_POINTS = frozenset(
    {"jit", "nki_jit", "baremetal", "benchmark", "simulate_kernel", "trace", "profile"}
)
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", "build", "_build", ".venv"})


@dataclass(frozen=True)
class KernelFile:
    """One kernel file: `path` relative to its repository's checkout."""

    repo: str
    path: str
    dialect: str
    kernels: tuple[str, ...]
    abspath: str = field(compare=False)

    @property
    def key(self) -> str:
        return f"{self.repo}/{self.path}"


def _dialect_of_module(name: str) -> str | None:
    root = name.split(".")
    if root[0] == "nki":
        return CURRENT
    if root[0] == "neuronxcc" and len(root) > 1 and root[1] == "nki":
        return BETA1
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _ImportScan(ast.NodeVisitor):
    """Names bound to NKI modules or entry points, and the dialects the imports select."""

    def __init__(self) -> None:
        self.dialects: set[str] = set()
        self.nki_names: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            d = _dialect_of_module(alias.name)
            if d:
                self.dialects.add(d)
                self.nki_names.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        d = _dialect_of_module(node.module)
        if node.module == "neuronxcc" and any(a.name == "nki" for a in node.names):
            d = BETA1
        if node.module == "torch_neuronx" or node.module.startswith("torch_neuronx."):
            # torch_neuronx is Beta 1 only through its nki_jit entry point
            d = BETA1 if any(a.name == "nki_jit" for a in node.names) else None
        if d:
            self.dialects.add(d)
            self.nki_names.update(a.asname or a.name for a in node.names)


def _kernels(tree: ast.Module, nki_names: set[str]) -> tuple[str, ...]:
    names = set(nki_names)
    # module-level aliases of NKI entry points: `nki_jit = nki.trace`
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, chain = stmt.targets[0], _dotted(stmt.value)
            if isinstance(target, ast.Name) and chain and chain[0] in nki_names:
                if not isinstance(stmt.value, ast.Call):
                    names.add(target.id)

    def is_entry(expr: ast.expr) -> bool:
        chain = _dotted(expr)
        if not chain or chain[0] not in names:
            return False
        return len(chain) == 1 or chain[-1] in ENTRY_POINTS

    found: list[str] = []
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.FunctionDef) and any(is_entry(d) for d in stmt.decorator_list):
            found.append(stmt.name)
    # `k = nki.jit(f)` makes a kernel of a function defined in this file; wrapping an imported
    # kernel (a test harness's `baremetal(flash_fwd)`) leaves it the kernel of its own file
    defined = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, ast.Assign | ast.Expr) else None
        if isinstance(value, ast.Call) and is_entry(value.func) and value.args:
            first = value.args[0]
            if isinstance(first, ast.Name) and first.id in defined and first.id not in found:
                found.append(first.id)
    return tuple(found)


_IMPORT_LINE = re.compile(
    r"^\s*(?:import|from)\s+(nki|neuronxcc\.nki|neuronxcc\s+import\s+nki|torch_neuronx)\b", re.M
)
_ENTRY_LINE = re.compile(
    r"^\s*@[\w.]*\b(?:" + "|".join(sorted(ENTRY_POINTS)) + r")\b.*\n(?:\s*@.*\n)*\s*def\s+(\w+)",
    re.M,
)


def _classify_unparsable(source: str) -> tuple[str | None, tuple[str, ...]]:
    """A file Python cannot parse is still a kernel file when its lines say so: nkic must
    report its syntax error, not skip it."""
    imports = [m.group(1) for m in _IMPORT_LINE.finditer(source)]
    if not imports:
        return None, ()
    beta1 = "nki" not in imports
    return (BETA1 if beta1 else CURRENT), tuple(_ENTRY_LINE.findall(source))


def classify(source: str) -> tuple[str | None, tuple[str, ...]]:
    """(dialect, kernel names) of a file's source; dialect None when it imports no NKI module.
    A file importing both dialects is a current file, as nkic reads it
    (`nkic.frontend.languages.for_file`): its Beta 1 imports are what nkic reports."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _classify_unparsable(source)
    scan = _ImportScan()
    scan.visit(tree)
    if not scan.dialects:
        return None, ()
    dialect = CURRENT if CURRENT in scan.dialects else BETA1
    return dialect, _kernels(tree, scan.nki_names)


def discover(corpus: str | os.PathLike) -> list[KernelFile]:
    """Every kernel file in the checkouts of REPOS under `corpus`, sorted."""
    corpus = Path(corpus)
    out: list[KernelFile] = []
    for repo in REPOS:
        root = corpus / repo
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
            )
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                full = Path(dirpath) / fn
                try:
                    source = full.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                dialect, kernels = classify(source)
                if dialect and kernels:
                    rel = full.relative_to(root).as_posix()
                    out.append(KernelFile(repo, rel, dialect, kernels, str(full)))
    return out
