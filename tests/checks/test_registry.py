"""Every registered check is documented, and its documented Example fires while its Fix stays quiet.

Doc examples are ```hlo fenced blocks holding a whole module. Options for the run can follow the fence
tag as TOML-ish pairs, e.g. ```hlo tpu="v6e" vmem_limit_kib=8192 (shellcheck's verified examples).
"""

from __future__ import annotations

import re
import tomllib

import pytest

import _lint_check
from hloscan.lint.engine import run_checks
from hloscan.hlo.loader import load_text
from hloscan.hlo.parser import HloSyntaxError
from hloscan.lint.registry import CODE_RE, NAME_RE, REQUIRED_SECTIONS, TOOL_CODES, all_checks
from hloscan.lint.stages import PREFERENCES

_BLOCK = re.compile(r"^```hlo(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
CHECKS = all_checks()


def hlo_blocks(text: str) -> list[tuple[dict, str]]:
    """(options, module text) for each ```hlo block of a doc section."""
    out = []
    for m in _BLOCK.finditer(text):
        info = m.group("info").strip()
        options = tomllib.loads("\n".join(info.split())) if info else {}
        out.append((options, m.group("body")))
    return out


def codes_for(check, options: dict, text: str) -> list[str]:
    try:
        modules = load_text(text, f"<{check.code} doc>")
    except HloSyntaxError as exc:
        pytest.fail(f"{check.code}: a doc example must be a whole, parseable HLO module: {exc}", pytrace=False)
    findings = []
    for module in modules:
        findings += run_checks(module, f"<{check.code} doc>", [check], {"_global": options})
    return [f.code for f in findings]


def test_codes_and_names_are_well_formed_and_unique():
    codes = [c.code for c in CHECKS] + list(TOOL_CODES)
    names = [c.name for c in CHECKS] + [t.name for t in TOOL_CODES.values()]
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    assert all(CODE_RE.match(c) for c in codes) and all(NAME_RE.match(n) for n in names)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.code)
def test_docs_have_sections_and_examples(check):
    docs = check.docs()
    for section in REQUIRED_SECTIONS:
        assert section in docs, f"{check.code} docstring lacks {section}"
    assert check.summary() and not check.summary().startswith("#")
    assert check.stage in PREFERENCES, f"{check.code} declares unknown stage {check.stage!r}"
    assert hlo_blocks(check.doc_section("Example")), f"{check.code}: ## Example needs a ```hlo block"
    assert hlo_blocks(check.doc_section("Fix")), f"{check.code}: ## Fix needs a ```hlo block"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.code)
def test_example_fires_exactly_its_code(check):
    for options, text in hlo_blocks(check.doc_section("Example")):
        codes = codes_for(check, options, text)
        assert codes and set(codes) == {check.code}, f"{check.code} Example gave {codes}"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.code)
def test_fix_is_quiet(check):
    for options, text in hlo_blocks(check.doc_section("Fix")):
        assert codes_for(check, options, text) == [], f"{check.code} Fix is not quiet"


def test_harness_catches_a_wrong_example():
    """The harness itself works: the test-only check's docs pass, and a non-firing text is noticed."""
    with _lint_check.registered() as check:
        [(opts, example)] = hlo_blocks(check.doc_section("Example"))
        [(_, fix)] = hlo_blocks(check.doc_section("Fix"))
        assert codes_for(check, opts, example) == ["HLO098"]
        assert codes_for(check, opts, fix) == []
        assert hlo_blocks('```hlo tpu="v6e" vmem_limit_kib=8\nHloModule m\n```\n')[0][0] == {
            "tpu": "v6e", "vmem_limit_kib": 8}
