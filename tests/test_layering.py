"""Import layering: the parser core knows nothing of checks or output; checks never print or report;
reporters read findings only (style.md 7.1). A forbidden import fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hloscan"

CORE = ("ir", "grammar", "transform", "strict", "fastpath", "parser", "attrs", "validate", "loader", "graph",
        "source", "finding")
FORBIDDEN = {
    # module prefix (relative to hloscan)  ->  hloscan submodules it must not import
    **{core: ("checks", "reporters", "commands", "cli", "engine", "runner") for core in CORE},
    "checks": ("reporters", "commands", "cli", "runner"),
    "reporters": ("checks", "commands", "cli"),
}


def _imports(path: Path) -> set[str]:
    """hloscan submodules imported by a file, resolved from relative and absolute imports."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            parts = base + (node.module.split(".") if node.module else [])
            names = [parts + [alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        else:
            continue
        found.update(".".join(n[1:]) for n in names if n and n[0] == "hloscan" and len(n) > 1)
    return found


def _owner(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    return rel[0]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layering(path):
    forbidden = FORBIDDEN.get(_owner(path), ())
    bad = sorted(i for i in _imports(path) if i.split(".")[0] in forbidden)
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"
