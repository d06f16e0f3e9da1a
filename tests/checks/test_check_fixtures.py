"""Every fixture under fixtures/checks/: the findings' (code, line) equal the inline `// expect: CODE` marks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from corpus import FIXTURES as FIXTURES_ROOT
from hloscan.lint.engine import run_checks
from hloscan.hlo.loader import load_file
from hloscan.lint.registry import all_checks

FIXTURES = FIXTURES_ROOT / "checks"
EXPECT = re.compile(r"//\s*expect:\s*(HLO\d{3})")
FILES = sorted(p for p in FIXTURES.rglob("*.hlo.txt"))


def expected_keys(path: Path) -> set[tuple[str, int]]:
    keys = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        keys.update((code, number) for code in EXPECT.findall(line))
    return keys


def found_keys(path: Path) -> set[tuple[str, int]]:
    loaded = load_file(str(path))
    assert loaded.ok, loaded.error.format() if loaded.error else "not loaded"
    keys = set()
    for module in loaded.modules:
        keys.update(f.key() for f in run_checks(module, str(path), all_checks()))
    return keys


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixture(path: Path) -> None:
    expected = expected_keys(path)
    if path.name.startswith("quiet_"):
        assert not expected, "quiet fixtures carry no expectations"
    if path.name.startswith("fires_"):
        assert expected, "fires fixtures need at least one `// expect: CODE`"
    assert found_keys(path) == expected


def test_every_check_dir_has_both_kinds() -> None:
    for directory in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        names = [p.name for p in directory.glob("*.hlo.txt")]
        if not names:
            continue  # another engineer's fixtures may use another format
        assert any(n.startswith("fires_") for n in names), directory
        assert any(n.startswith("quiet_") for n in names), directory
