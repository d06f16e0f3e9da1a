"""Hostile strings in metadata, custom_call_target and frontend attributes come out escaped in every reporter format."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hloscan.lint import registry
from hloscan.hlo.attrs import parse_frontend_attributes, parse_metadata
from hloscan.cli import main
from hloscan.lint.finding import Severity
from hloscan.lint.registry import Check
from _lint_check import ENGINE_TEST_FAMILY
from hloscan.reporters import REPORTERS

HOSTILE = {"quote": '"', "lt": "<", "newline": "\n", "brace": "}", "arrow": "->", "percent": "%", "colons": "::"}


def _c_escape(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dump(payload: str) -> str:
    """A module whose free-text fields all carry the payload (wrapped in markers to find it again)."""
    s = _c_escape(f"A{payload}Z")
    return (
        "HloModule hostile\n\nENTRY %main (p: f32[4]) -> f32[4] {\n"
        f"  %p = f32[4]{{0}} parameter(0), metadata={{op_name={s} source_file={s} source_line=7}}\n"
        f"  ROOT %cc = f32[4]{{0}} custom-call(f32[4]{{0}} %p), custom_call_target={s}, "
        f"frontend_attributes={{note={s}}}, metadata={{op_name={s} source_file={s} source_line=9}}\n"
        "}\n"
    )


class _EchoFreeText(Check):
    """Echoes an instruction's free-text fields into a finding (test-only).

    ## What it flags
    Every custom-call.
    ## Why it matters
    It carries dump strings to the reporters.
    ## Example
    None.
    ## Fix
    None.
    """

    code = "HLO998"
    name = "fuzz-echo-free-text"
    severity = Severity.WARNING
    family = ENGINE_TEST_FAMILY

    def run(self, ctx):
        for comp, inst in ctx.instructions(frozenset({"custom-call"})):
            meta = parse_metadata(inst.attr("metadata"))
            note = parse_frontend_attributes(inst.attr("frontend_attributes")).get("note", "")
            message = f"target {inst.custom_call_target} op {meta.get('op_name')} note {note}"
            yield self.finding(ctx, comp, inst, message, hint=f"from {meta.get('source_file')}")


@pytest.fixture()
def echo_check():
    registry.all_checks()
    registry.register(_EchoFreeText)
    yield
    registry._CHECKS.pop(_EchoFreeText.code, None)


def _check(tmp_path, payload: str, fmt: str) -> str:
    path = tmp_path / "hostile.hlo"
    path.write_text(_dump(payload), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(path), "--select", "HLO998", "--format", fmt],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    return result.stdout


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_dump_keeps_the_payload(payload):
    from hloscan.hlo.parser import parse_text

    for strict in (False, True):
        (module,) = parse_text(_dump(payload), "hostile.hlo", strict)
        assert module.entry.root.custom_call_target == f"A{payload}Z"
        assert parse_metadata(module.entry.root.attr("metadata"))["source_file"] == f"A{payload}Z"


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_json(tmp_path, echo_check, payload):
    doc = json.loads(_check(tmp_path, payload, "json"))
    (finding,) = [f for f in doc["findings"] if f["code"] == "HLO998"]
    assert finding["message"] == f"target A{payload}Z op A{payload}Z note A{payload}Z"
    assert finding["source"]["file"] == f"A{payload}Z"


@pytest.mark.skipif("sarif" not in REPORTERS, reason="no sarif reporter registered")
@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_sarif(tmp_path, echo_check, payload):
    doc = json.loads(_check(tmp_path, payload, "sarif"))
    results = [r for run in doc["runs"] for r in run["results"] if r.get("ruleId") == "HLO998"]
    assert len(results) == 1
    # SARIF §3.11.5: literal braces in message text are doubled ({{ and }}), placeholders are single.
    assert f"A{payload}Z".replace("{", "{{").replace("}", "}}") in results[0]["message"]["text"]


@pytest.mark.skipif("github" not in REPORTERS, reason="no github reporter registered")
@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_github(tmp_path, echo_check, payload):
    out = _check(tmp_path, payload, "github")
    commands = [line for line in out.splitlines() if line.startswith("::")]
    (annotation,) = [c for c in commands if "HLO998" in c]
    # One command per line: a raw newline in the message would start a bogus second line.
    assert all(line.startswith("::") or not line.strip() for line in out.splitlines())
    escaped = payload.replace("%", "%25").replace("\n", "%0A")
    message = annotation.split("::", 2)[2]
    assert f"A{escaped}Z" in message


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_text(tmp_path, echo_check, payload):
    out = _check(tmp_path, payload, "text")
    (line,) = [ln for ln in out.splitlines() if "HLO998" in ln and not ln.startswith("For details")]
    assert line.startswith(str(tmp_path / "hostile.hlo") + ":")
    if "\n" not in payload:
        assert f"target A{payload}Z" in line


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_file_path_in_syntax_error(tmp_path, payload):
    """File paths are free text too: a broken file named with the payload still yields parseable JSON."""
    safe = payload.replace("\n", "_nl_")
    folder = tmp_path / f"dir{safe}"
    try:
        folder.mkdir()
    except OSError:
        pytest.skip("file system refuses the name")
    path = folder / f"x{safe}.hlo"
    path.write_text("HloModule m\nENTRY e {\n  ROOT %a = f32[] custom-call(\n}\n", encoding="utf-8")
    for fmt in sorted(REPORTERS):
        result = CliRunner().invoke(main, ["check", str(path), "--format", fmt], catch_exceptions=False)
        assert result.exit_code == 2
        if fmt in ("json", "sarif"):
            json.loads(result.stdout)
