"""Issue 11 items 3 and 5: the README's commands work as written and print what it shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _console_examples() -> list[tuple[str, str]]:
    """(command, shown output) for every `$ hloscan ...` line of the README's console blocks."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        lines = block.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        for n, i in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            out.append((lines[i][2:], "\n".join(lines[i + 1 : end])))
    return out


@pytest.mark.parametrize("command,shown", _console_examples(), ids=lambda v: v[:50] if isinstance(v, str) else "")
def test_readme_console_example_prints_what_it_shows(command, shown):
    argv = shlex.split(command)
    assert argv[0] == "hloscan"
    proc = subprocess.run([sys.executable, "-m", "hloscan", *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert (proc.stdout + proc.stderr).rstrip("\n") == shown


def test_quick_start_puts_hloscan_on_path_before_using_it():
    """`make demo` never activates the venv: the README must say how `hloscan` gets on PATH before the
    first bare `hloscan` command."""
    activation = min(i for i in (README.find(".venv/bin/activate"), README.find(".venv/bin/hloscan")) if i >= 0)
    first_use = re.search(r"^\$? ?hloscan ", README, re.M)
    assert first_use is not None and activation < first_use.start()


def test_ci_example_installs_from_the_repository():
    assert not re.search(r"pip install hloscan\b", README)  # not published: it would install nothing (or another)
    assert "pip install ." in README or "pip install \"git+" in README
