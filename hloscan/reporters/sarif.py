"""SARIF 2.1.0 log: rules from the registry, one result per finding, parse failures as tool notifications."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, TextIO
from datetime import datetime, timezone

from hloscan.version import __version__
from hloscan.lint.engine import ScanResult
from hloscan.lint.files import json_safe, printable, uri_path
from hloscan.lint.finding import Finding, Severity, Span
from hloscan.reporters.json_reporter import summary
from hloscan.lint.registry import TOOL_CODES, Check, all_checks

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/hloscan/"
SRCROOT = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def message(text: str) -> dict[str, str]:
    """A SARIF message object; literal braces are doubled (SARIF §3.11.5), and HLO text is full of them."""
    return {"text": text.replace("{", "{{").replace("}", "}}")}


# ---------------------------------------------------------------------- rules


def rule_descriptor(check: type[Check]) -> dict[str, Any]:
    docs = check.docs()
    props: dict[str, Any] = {"tags": [check.family.name], "stage": check.stage}
    if check.xla_error:
        props["xla_error"] = check.xla_error
    return {
        "id": check.code,
        "name": check.name,
        "shortDescription": {"text": check.summary()},
        "fullDescription": {"text": docs},
        "help": {"text": f"{docs}\n\nRun `hloscan rule {check.code}` for details.", "markdown": docs},
        "defaultConfiguration": {"level": LEVELS[check.severity]},
        "properties": props,
    }


def tool_descriptor(code: str) -> dict[str, Any]:
    tool = TOOL_CODES[code]
    return {
        "id": tool.code,
        "name": tool.name,
        "shortDescription": {"text": tool.summary},
        "fullDescription": {"text": tool.summary},
        "defaultConfiguration": {"level": LEVELS[tool.severity]},
        "properties": {"tags": ["tool"]},
    }


# ---------------------------------------------------------------------- locations


class Locator:
    """Turns paths into artifact locations: relative to the working folder (%SRCROOT%) when under it."""

    def __init__(self, root: str | None = None):
        self.root = Path(root or os.getcwd()).resolve()

    def artifact(self, path: str) -> dict[str, str]:
        p = Path(path)
        absolute = p if p.is_absolute() else (self.root / p)
        try:
            rel = absolute.resolve().relative_to(self.root)
            return {"uri": uri_path(rel.as_posix()), "uriBaseId": SRCROOT}
        except (ValueError, OSError):
            pass
        if p.is_absolute():
            return {"uri": p.as_uri()}
        # A relative path from someone else's machine (Python metadata): keep it relative, percent-encoded.
        return {"uri": uri_path(p.as_posix())}

    def physical(self, span: Span) -> dict[str, Any]:
        region: dict[str, int] = {"startLine": max(span.line, 1), "startColumn": max(span.col, 1)}
        if span.end_line:
            region["endLine"] = span.end_line
        if span.end_col:
            region["endColumn"] = span.end_col
        return {"physicalLocation": {"artifactLocation": self.artifact(span.path), "region": region}}

    def source(self, file: str, line: int) -> dict[str, Any]:
        return {"physicalLocation": {"artifactLocation": self.artifact(file), "region": {"startLine": max(line, 1)}}}


def _logical(f: Finding) -> list[dict[str, str]]:
    parts = [p for p in (f.module, f.computation, f.instruction) if p]
    if not parts:
        return []
    return [{"name": parts[-1], "fullyQualifiedName": "/".join(parts),
             "kind": "variable" if f.instruction else "function"}]


# ---------------------------------------------------------------------- results


def result(f: Finding, index: dict[str, int], loc: Locator) -> dict[str, Any]:
    location = loc.physical(f.span)
    logical = _logical(f)
    if logical:
        location["logicalLocations"] = logical
    out: dict[str, Any] = {
        "ruleId": f.code,
        "level": LEVELS[f.severity],
        "message": message(f.message + (f"\nhint: {f.hint}" if f.hint else "")),
        "locations": [location],
        "partialFingerprints": {"hloscanBaselineKey/v1": _fingerprint(f)},
    }
    if f.code in index:
        out["ruleIndex"] = index[f.code]
    related = _related(f, loc)
    if related:
        out["relatedLocations"] = related
    props = {k: v for k, v in (("xla_error", f.xla_error), ("hint", f.hint), ("name", f.name)) if v}
    if f.data:
        props["data"] = _jsonable(f.data)
    out["properties"] = props
    return out


def _related(f: Finding, loc: Locator) -> list[dict[str, Any]]:
    out = []
    # jax writes "-" or "<...>" as the file of code that has none; such a location points nowhere.
    if f.source is not None and f.source.file not in ("", "-") and not f.source.file.startswith("<"):
        where = loc.source(f.source.file, f.source.line)
        note = "Python source" + (f" ({f.source.function})" if f.source.function else "")
        out.append({**where, "message": message(note)})
    for rel in f.related:
        out.append({**loc.physical(rel.span), "message": message(rel.note)})
    for i, item in enumerate(out, start=1):
        item["id"] = i
    return out


def _fingerprint(f: Finding) -> str:
    # Stable across line shifts and re-dumps, like the baseline, so code scanning tracks a finding over time.
    key = "\x1f".join(part or "" for part in f.baseline_key())
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def notification(loaded, loc: Locator) -> dict[str, Any]:
    err = loaded.error
    where = loc.physical(Span(loaded.path, err.line, err.col))
    return {"level": "error", "message": message(f"{err.code} {err.message}"), "locations": [where],
            "descriptor": {"id": err.code}}


# ---------------------------------------------------------------------- log


def build_log(result_: ScanResult, root: str | None = None) -> dict[str, Any]:
    loc = Locator(root)
    checks = all_checks()
    rules = [rule_descriptor(c) for c in checks] + [tool_descriptor(code) for code in sorted(TOOL_CODES)]
    index = {r["id"]: i for i, r in enumerate(rules)}
    failed = [f for f in result_.files if f.error is not None]
    notifications = [notification(f, loc) for f in failed]
    if result_.nothing_analysed:
        notifications.append({"level": "error", "message": message("no HLO module was found in the inputs")})
    invocation = {
        "executionSuccessful": not result_.incomplete and not result_.nothing_analysed,
        "toolExecutionNotifications": notifications,
        **_times(result_),
        "properties": {"summary": summary(result_),
                       "skipped": [{"path": path, "reason": reason} for path, reason in result_.skipped]},
    }
    run = {
        "tool": {"driver": {"name": "hloscan", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFORMATION_URI, "rules": rules}},
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": loc.root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [result(f, index, loc) for f in result_.findings],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _times(result_: ScanResult) -> dict[str, str]:
    if result_.started is None or result_.elapsed is None:
        return {}
    return {"startTimeUtc": _utc(result_.started), "endTimeUtc": _utc(result_.started + result_.elapsed)}


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


valid_text = json_safe  # a SARIF log is UTF-8 JSON: the same rule as every JSON report


def render(result_: ScanResult, out: TextIO, colour: bool = False) -> None:
    json.dump(valid_text(build_log(result_)), out, indent=2, ensure_ascii=False)
    out.write("\n")
