"""The frontend's module structure: its import graph (read from the source, every import
statement including those inside functions) has no cycle, and the interpreter core does not
depend on any one language version."""

import ast
from pathlib import Path

import networkx as nx

import nkic.frontend

ROOT = Path(nkic.frontend.__file__).parent
PACKAGE = "nkic.frontend"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[2:]) if name != PACKAGE else Path()
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for path in ROOT.rglob("*.py"):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if _is_module(sub) else source)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                targets.append(node.module)
            elif isinstance(node, ast.Import):
                targets += [a.name for a in node.names if a.name.startswith(PACKAGE)]
            for t in targets:
                if t.startswith(PACKAGE + ".") and _is_module(t):
                    graph.add_edge(name, t)
    return graph


def test_graph_is_read_from_the_source():
    graph = import_graph()
    assert graph.has_edge("nkic.frontend.specialiser", "nkic.frontend.pylib")
    assert graph.has_edge("nkic.frontend.languages", "nkic.frontend.languages.nki_0_3")
    assert graph.has_edge("nkic.frontend.languages.nki_0_3", "nkic.frontend.nki_surface")


def test_frontend_imports_are_acyclic():
    graph = import_graph()
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_interpreter_core_does_not_depend_on_a_language_version():
    graph = import_graph()
    versions = {n for n in graph if n.startswith(f"{PACKAGE}.languages.")}
    for module in graph:
        if module.startswith(f"{PACKAGE}.languages"):
            continue
        direct = versions & set(graph.successors(module))
        assert not direct, f"{module} imports {sorted(direct)}; select versions via languages.get"
