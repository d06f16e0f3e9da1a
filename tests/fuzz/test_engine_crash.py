"""A check that raises on one module becomes an HLO900 finding for that module; the run goes on and exits 2."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hloscan.lint import registry
from hloscan.cli import main
from hloscan.lint.finding import Severity
from hloscan.lint.registry import Check
from _lint_check import ENGINE_TEST_FAMILY

from .seeds import BUILTIN

VICTIM = "crash_me"


class _CrashOnOneModule(Check):
    """Raises on the module named crash_me, finds nothing elsewhere (test-only).

    ## What it flags
    Nothing.
    ## Why it matters
    It tests the engine.
    ## Example
    None.
    ## Fix
    None.
    """

    code = "HLO999"
    name = "fuzz-crash-on-one-module"
    severity = Severity.ERROR
    family = ENGINE_TEST_FAMILY

    def run(self, ctx):
        if ctx.module.name == VICTIM:
            raise ZeroDivisionError("deliberate crash for the test")
        return iter(())


def _register():
    registry.all_checks()  # import the real checks first, so registration order matches a normal run
    registry.register(_CrashOnOneModule)


def _unregister():
    registry._CHECKS.pop(_CrashOnOneModule.code, None)


def test_crashing_check_becomes_hlo900(tmp_path):
    victim = tmp_path / "victim.hlo"
    victim.write_bytes(BUILTIN.replace(b"HloModule builtin", b"HloModule " + VICTIM.encode()))
    healthy = tmp_path / "healthy.hlo"
    healthy.write_bytes(BUILTIN)
    _register()
    try:
        result = CliRunner().invoke(main, ["check", str(victim), str(healthy), "--format", "json"],
                                    catch_exceptions=False)
    finally:
        _unregister()
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    crashed = [f for f in doc["findings"] if f["code"] == "HLO900"]
    assert len(crashed) == 1
    assert crashed[0]["path"] == str(victim) and crashed[0]["module"] == VICTIM
    assert "HLO999" in crashed[0]["message"] and "ZeroDivisionError" in crashed[0]["message"]
    assert {f["path"] for f in doc["files"]} == {str(victim), str(healthy)}
    assert all(f["ok"] for f in doc["files"])


def test_registry_is_clean_after_the_test():
    assert _CrashOnOneModule.code not in {c.code for c in registry.all_checks()}
