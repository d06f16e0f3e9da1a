"""The SARIF log of a run over the tpu-oracle corpus validates against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest

import _lint_check
import hloscan.checks  # noqa: F401  (registers the checks)
from hloscan.lint.config import Config
from hloscan.lint.scan import scan
from hloscan.reporters import sarif
from corpus import SHARED, require_path as _need

CORPUS = SHARED / "corpus"
SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(_need(SCHEMA).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)  # the schema declares draft-04
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(validator, log) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


def _render(result) -> dict:
    out = io.StringIO()
    sarif.render(result, out)
    return json.loads(out.getvalue())  # what a consumer reads, not the in-memory dict


def test_tpu_oracle_run_validates(validator):
    corpus = _need(CORPUS / "tpu-oracle")
    result = scan([str(corpus)], Config(), jobs=2)
    log = _render(result)
    assert _errors(validator, log) == []
    run = log["runs"][0]
    assert len(run["results"]) == len(result.findings)
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    assert run["invocations"][0]["executionSuccessful"] is True
    print(f"\nSARIF: {len(run['results'])} results, {len(ids)} rules, schema-valid")


def test_failures_notifications_and_escaping(validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = tmp_path / "dir with space" / "ok.hlo.txt"
    good.parent.mkdir()
    good.write_text(_lint_check.module_text("FLAG {1,0:T(8,128)} \"q\"\n%"), encoding="utf-8")
    bad = tmp_path / "bad.hlo.txt"
    bad.write_text("HloModule m\n\nENTRY main {\n  p = f32[8 parameter(0)\n}\n", encoding="utf-8")
    with _lint_check.registered():
        log = _render(scan([str(tmp_path)], Config(), keep_modules=True))
    assert _errors(validator, log) == []
    run = log["runs"][0]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False
    [note] = inv["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "HLO001"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "bad.hlo.txt", "uriBaseId": "%SRCROOT%"}
    [res] = run["results"]
    assert res["ruleId"] == "HLO098"
    # Braces from the dump are doubled (SARIF §3.11.5), quotes and newlines survive as JSON escapes.
    assert res["message"]["text"].startswith('op FLAG {{1,0:T(8,128)}} "q"\n%')
    loc = res["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == "dir%20with%20space/ok.hlo.txt"
    assert loc["logicalLocations"][0]["fullyQualifiedName"] == "m/main/n"
    [src] = res["relatedLocations"]
    assert src["physicalLocation"]["artifactLocation"]["uri"] == "file:///src/model.py"
    assert src["physicalLocation"]["region"]["startLine"] == 7
    rule = run["tool"]["driver"]["rules"][res["ruleIndex"]]
    assert rule["id"] == "HLO098" and rule["defaultConfiguration"]["level"] == "warning"
    assert rule["shortDescription"]["text"] == "An instruction whose op_name metadata contains the marker."
    assert "## Example" in rule["fullDescription"]["text"]
