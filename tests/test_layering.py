"""Import layering of the hloscan package, as an allow-list over every module (README "Package layers").

Every `import` / `from ... import` counts, wherever it sits: at module level, inside functions and under
`if TYPE_CHECKING:`; relative imports are resolved. `from hloscan.x import y` is an edge to the module
hloscan.x.y when that is a module, else to hloscan.x. A forbidden edge, an import cycle or a new top-level
module fails here (with the offending edges printed), not in review.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

from corpus import REPO

PACKAGE = REPO / "hloscan"

# Layer of a module -> the layers it may import. A module's layer is its sub-package under hloscan/
# (hlo, analyses, ...) or, for a module sitting directly in hloscan/, its own name ("hloscan" is __init__).
ALLOWED: dict[str, frozenset[str]] = {
    "hlo": frozenset({"hlo"}),
    "analyses": frozenset({"hlo", "analyses"}),
    "lint": frozenset({"hlo", "lint", "version"}),
    "checks": frozenset({"hlo", "analyses", "lint", "checks"}),
    "reporters": frozenset({"lint", "reporters", "version"}),
    # report/: timeline and VMEM-bar data from the analyses, their charts and the HTML report (no checks, no cli).
    "report": frozenset({"hlo", "analyses", "lint", "report", "version"}),
    # confirm/: `hloscan confirm`, the TPU compiler's second opinion; its worker.py alone imports jax.
    "confirm": frozenset({"hlo", "analyses", "lint", "confirm"}),
    "cli": frozenset({"hloscan", "hlo", "analyses", "lint", "checks", "reporters", "report", "confirm", "cli",
                      "version"}),
    "hloscan": frozenset({"api", "version"}),  # hloscan/__init__.py: lazy re-exports of the public API
    "api": frozenset({"hlo", "lint", "checks", "confirm", "version"}),  # hloscan/api.py: load, check, confirm_tpu
    "__main__": frozenset({"cli"}),
    "version": frozenset(),
}
MAX_TOP_LEVEL_MODULES = 4  # __init__, __main__, version and at most one more


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    line: int
    where: str  # "", "in a function" or "under TYPE_CHECKING"

    def __str__(self) -> str:
        note = f" ({self.where})" if self.where else ""
        return f"{self.source}:{self.line} -> {self.target}{note}"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "hloscan"


def _resolve(base: str, name: str | None) -> str:
    """`from base import name`: the module base.name when there is one, else base."""
    if name and f"{base}.{name}" in MODULES:
        return f"{base}.{name}"
    return base


def _longest_module_prefix(dotted: str) -> str | None:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in MODULES:
            return ".".join(parts[:end])
    return None


def _context(tree: ast.AST) -> dict[ast.AST, str]:
    """Import nodes inside a function or an `if TYPE_CHECKING:` block, and which of the two."""
    where: dict[ast.AST, str] = {}

    def visit(node: ast.AST, note: str) -> None:
        for child in ast.iter_child_nodes(node):
            child_note = note
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                child_note = note or "in a function"
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                child_note = "under TYPE_CHECKING"
            if isinstance(child, (ast.Import, ast.ImportFrom)) and note:
                where[child] = note
            visit(child, child_note)

    visit(tree, "")
    return where


def imports_of(module: str) -> list[Edge]:
    """Every hloscan module `module` imports, one Edge per imported name."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = _context(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges = []
    for node in ast.walk(tree):
        targets: list[str | None] = []
        if isinstance(node, ast.Import):
            targets = [_longest_module_prefix(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "hloscan":
                continue
            targets = [_resolve(_longest_module_prefix(base) or base, alias.name) for alias in node.names]
        for target in targets:
            if target is not None and target.split(".")[0] == "hloscan" and target != module:
                edges.append(Edge(module, target, node.lineno, where.get(node, "")))
    return sorted(set(edges), key=lambda e: (e.line, e.target))  # set: `from m import a, b` is one edge


def _has_imports(module: str) -> bool:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree))


def import_graph() -> nx.DiGraph:
    """Module -> imported module, without edges into package __init__ files that import nothing."""
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        for edge in imports_of(module):
            is_bare_package = MODULES[edge.target].name == "__init__.py" and not _has_imports(edge.target)
            if not is_bare_package:
                graph.add_edge(edge.source, edge.target, edges=graph.get_edge_data(
                    edge.source, edge.target, {}).get("edges", []) + [edge])
    return graph


# ---------------------------------------------------------------------------------------------- tests


def test_every_module_has_a_layer():
    unknown = sorted(m for m in MODULES if layer(m) not in ALLOWED)
    assert not unknown, f"modules in no layer of ALLOWED (add the layer with its allowed imports): {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_layers(module):
    allowed = ALLOWED.get(layer(module), frozenset())
    bad = [e for e in imports_of(module) if layer(e.target) not in allowed]
    assert not bad, (f"{module} (layer {layer(module)!r}, may import {sorted(allowed)}) has forbidden imports:\n  "
                     + "\n  ".join(f"{e}  [layer {layer(e.target)!r}]" for e in bad))


def test_import_graph_has_no_cycles():
    graph = import_graph()
    report = []
    for component in sorted((sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)):
        cycle = nx.find_cycle(graph.subgraph(component))
        steps = "\n    ".join(str(e) for u, v in cycle for e in graph.edges[u, v]["edges"])
        report.append(f"{len(component)} modules import each other: {', '.join(component)}\n"
                      f"  e.g. the cycle:\n    {steps}")
    assert not report, f"{len(report)} import cycle(s):\n" + "\n".join(report)


def test_few_modules_directly_in_the_package():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules directly in hloscan/: {top}"


# ------------------------------------------------------------------------ the analysis itself is right


def test_resolution_of_absolute_relative_and_nested_imports(tmp_path, monkeypatch):
    """The edge finder sees relative imports, imports inside functions and TYPE_CHECKING blocks."""
    pkg = tmp_path / "hloscan"
    (pkg / "lint").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "version.py").write_text("")
    (pkg / "lint" / "__init__.py").write_text("")
    (pkg / "lint" / "finding.py").write_text("")
    (pkg / "lint" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import finding\n"
        "from .. import version\n"
        "from hloscan import __version__\n"
        "if TYPE_CHECKING:\n    import hloscan.lint.finding\n"
        "def f():\n    from hloscan.lint.finding import X\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {module_name(p): p for p in sorted(pkg.rglob("*.py"))})
    got = [(e.target, e.line, e.where) for e in imports_of("hloscan.lint.engine")]
    assert got == [("hloscan.lint.finding", 2, ""), ("hloscan.version", 3, ""), ("hloscan", 4, ""),
                   ("hloscan.lint.finding", 6, "under TYPE_CHECKING"), ("hloscan.lint.finding", 8, "in a function")]
    assert layer("hloscan") == "hloscan" and "hloscan" not in ALLOWED["lint"]
