"""jax and libtpu stay behind hloscan/confirm/worker.py: `import hloscan`, `hloscan check` and even
`hloscan confirm`'s own process never import them (the tpu extra is installed in this venv, so an import
would succeed and be seen), and no module but the worker mentions them in an import."""

from __future__ import annotations

import ast
import subprocess
import sys

from corpus import FIXTURES, REPO

HEAVY = ("jax", "jaxlib", "libtpu")


def imported_modules(*args: str) -> set[str]:
    """Top-level names of every module `python -X importtime ARGS` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=300)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "hloscan" in names, done.stderr[-2000:]
    return names


def test_jax_is_installed_here_so_the_following_tests_mean_something():
    import importlib.util

    assert importlib.util.find_spec("jax") is not None and importlib.util.find_spec("libtpu") is not None


def test_import_hloscan_and_check_never_import_jax():
    dump = str(FIXTURES / "demo" / "offload_output.hlo.txt")
    assert not set(HEAVY) & imported_modules("-c", f"import hloscan; hloscan.check({dump!r})")
    assert not set(HEAVY) & imported_modules("-m", "hloscan", "check", dump)


def test_confirm_process_itself_never_imports_jax():
    """The parent only spawns workers: with a python that has no extra it stops before any compile."""
    names = imported_modules("-m", "hloscan", "confirm", str(FIXTURES / "confirm" / "sharded_add.hlo"),
                             "--tpu", "v5e", "--python", "/nonexistent/python")
    assert not set(HEAVY) & names


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_the_worker_imports_jax_and_nothing_imports_the_worker():
    worker = REPO / "hloscan" / "confirm" / "worker.py"
    # hlo/jax_input.py reads a jax object the caller handed over: jax is loaded already, and it imports
    # jax only inside the function that reads that object (checked below).
    reader = REPO / "hloscan" / "hlo" / "jax_input.py"
    offenders, importers = [], []
    for path in sorted((REPO / "hloscan").rglob("*.py")):
        names = _imports(path)
        if path not in (worker, reader) and any(n.split(".")[0] in HEAVY for n in names):
            offenders.append(str(path.relative_to(REPO)))
        if any(n == "hloscan.confirm.worker" for n in names):
            importers.append(str(path.relative_to(REPO)))
    assert not offenders and not importers
    # The worker runs in the extra's python, where hloscan may not be installed: it imports no hloscan.
    assert not any(n.split(".")[0] == "hloscan" for n in _imports(worker))
    assert any(n.split(".")[0] == "jax" for n in _imports(worker))
    top_level = [n for n in ast.parse(reader.read_text(encoding="utf-8")).body
                 if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any(getattr(n, "module", None) == "jax" or any(a.name == "jax" for a in n.names) for n in top_level)
