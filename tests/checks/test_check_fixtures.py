"""Every fixture under fixtures/checks/: the findings' (code, line) equal the inline `// expect: CODE` marks.

A fixture may set the run's options in header comments before its HloModule line, with the keys of
`[tool.hloscan]` (dotted for tables) and TOML scalars or comma lists as values, e.g.

    // hloscan: tpu=v6e vmem_limit_kib=65536 checks.scoped-vmem-tight.margin=0.3

The header goes through the config validation (hloscan.lint.config.parse_config), so a typo fails the test.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from corpus import FIXTURES as FIXTURES_ROOT
from hloscan.analyses.tpu import DEFAULT_TPU
from hloscan.hlo.loader import load_file
from hloscan.lint.config import Config, ConfigError, parse_config
from hloscan.lint.engine import Selection, run_checks, selected_checks
from hloscan.lint.registry import all_checks

FIXTURES = FIXTURES_ROOT / "checks"
EXPECT = re.compile(r"//\s*expect:\s*(HLO\d{3})")
HEADER = re.compile(r"^\s*//\s*hloscan:(.*)$")
FILES = sorted(p for p in FIXTURES.rglob("*.hlo.txt"))


def header_value(text: str) -> Any:
    """A TOML scalar (`65536`, `0.3`, `true`, `"x"`), else the bare word as a string; `a,b` is a list."""
    if "," in text and not text.startswith(("[", '"', "'")):
        return [header_value(part) for part in text.split(",") if part]
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def header_table(text: str) -> dict[str, Any]:
    """The `[tool.hloscan]` table the `// hloscan:` lines before the HloModule line spell out."""
    table: dict[str, Any] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("HloModule"):
            break
        match = HEADER.match(line)
        for pair in match.group(1).split() if match else ():
            key, sep, value = pair.partition("=")
            assert sep and key and value, f"header item {pair!r} is not key=value"
            *tables, leaf = key.split(".")
            node = table
            for name in tables:
                node = node.setdefault(name, {})
            node[leaf] = header_value(value)
    return table


def fixture_config(path: Path) -> Config:
    return parse_config(header_table(path.read_text(encoding="utf-8")), f"{path.name} header: ")


def expected_keys(path: Path) -> set[tuple[str, int]]:
    keys = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        keys.update((code, number) for code in EXPECT.findall(line))
    return keys


def found_keys(path: Path) -> set[tuple[str, int]]:
    config = fixture_config(path)
    checks = selected_checks(Selection(config.select or (), config.ignore or ()))
    loaded = load_file(str(path))
    assert loaded.ok, loaded.error.format() if loaded.error else "not loaded"
    keys = set()
    for module in loaded.modules:
        keys.update(f.key() for f in run_checks(module, str(path), checks, config.options(), config.severity))
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


def test_header_becomes_run_options() -> None:
    text = ("// a kernel\n// hloscan: tpu=v6e vmem_limit_kib=65536\n// hloscan: checks.scoped-vmem-tight.margin=0.3"
            " ignore=HLO3,HLO102\nHloModule m\n// hloscan: tpu=v4\n")
    table = header_table(text)
    assert table == {"tpu": "v6e", "vmem_limit_kib": 65536, "checks": {"scoped-vmem-tight": {"margin": 0.3}},
                     "ignore": ["HLO3", "HLO102"]}
    config = parse_config(table)
    assert config.options() == {"_global": {"tpu": "v6e", "vmem_limit_kib": 65536}, "scoped-vmem-tight": {"margin": 0.3}}
    assert config.ignore == ("HLO3", "HLO102")


def test_header_typo_is_an_error() -> None:
    with pytest.raises(ConfigError, match="vmem_limit_kb"):
        parse_config(header_table("// hloscan: vmem_limit_kb=100\nHloModule m\n"))
    with pytest.raises(ConfigError, match="tpu"):
        parse_config(header_table("// hloscan: tpu=v9\nHloModule m\n"))


def test_options_reach_the_checks() -> None:
    """The same kernel fires or stays quiet by its header alone (the 18 MiB matmul: over 16 MiB, under 32 MiB)."""
    v5e, v6e = FIXTURES / "HLO201" / "fires_f32_matmul_blocks_18mib.hlo.txt", FIXTURES / "HLO201" / "quiet_v6e_f32_matmul_18mib.hlo.txt"
    assert header_table(v5e.read_text(encoding="utf-8")) == {}
    assert {code for code, _ in found_keys(v5e)} == {"HLO201"} and found_keys(v6e) == set()


def _generation(path: Path) -> str:
    return str(fixture_config(path).global_options.get("tpu") or DEFAULT_TPU)


@pytest.mark.parametrize("check", [c for c in all_checks() if "tpu" in c.family.options], ids=lambda c: c.code)
def test_generation_dependent_rules_have_fixtures_on_several_generations(check) -> None:
    """A rule whose verdict depends on the TPU generation fires and stays quiet on more than the default one."""
    files = sorted((FIXTURES / check.code).glob("*.hlo.txt"))
    fires = {_generation(p) for p in files if p.name.startswith("fires_")}
    quiet = {_generation(p) for p in files if p.name.startswith("quiet_")}
    assert len(fires - {DEFAULT_TPU}) >= 2 and len(quiet - {DEFAULT_TPU}) >= 2, (check.code, fires, quiet)


@pytest.mark.parametrize("check", [c for c in all_checks() if c.options], ids=lambda c: c.code)
def test_every_rule_option_is_set_by_some_fixture(check) -> None:
    """Each option a rule declares changes a verdict in at least one of its fixtures (set in the header)."""
    set_by_headers = set()
    for path in (FIXTURES / check.code).glob("*.hlo.txt"):
        set_by_headers.update(fixture_config(path).check_options.get(check.name, {}))
    assert set(check.options) <= set_by_headers, f"{check.code}: no fixture sets {set(check.options) - set_by_headers}"
