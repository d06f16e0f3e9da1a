"""GitLab Code Quality report (a JSON array of issues), for merge-request widgets: `artifacts: reports:
codequality: hloscan.json`. Severities map error -> critical, warning -> major, note -> info; the fingerprint
is the baseline key's hash, so an issue keeps its identity across line shifts and re-dumps."""

from __future__ import annotations

import hashlib
import json
from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import json_safe
from hloscan.lint.finding import Finding, Severity

SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.NOTE: "info"}


def fingerprint(f: Finding) -> str:
    key = "\x1f".join(part or "" for part in (f.span.path,) + f.baseline_key())
    return hashlib.md5(key.encode("utf-8")).hexdigest()  # noqa: S324 - an identifier, not security


def issue(f: Finding) -> dict:
    description = f.message + (f" (XLA {f.xla_error})" if f.xla_error else "")
    return {"type": "issue", "check_name": f.code, "description": description,
            "content": {"body": f.hint or ""}, "categories": ["Bug Risk"], "severity": SEVERITY[f.severity],
            "fingerprint": fingerprint(f), "location": {"path": f.span.path, "lines": {"begin": f.span.line}}}


def parse_error(loaded) -> dict:
    e = loaded.error
    key = "\x1f".join((loaded.path, e.code, e.message))
    return {"type": "issue", "check_name": e.code, "description": e.message, "categories": ["Bug Risk"],
            "severity": "blocker", "fingerprint": hashlib.md5(key.encode("utf-8")).hexdigest(),  # noqa: S324
            "location": {"path": loaded.path, "lines": {"begin": e.line}}}


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    issues = [parse_error(f) for f in result.files if f.error is not None] + [issue(f) for f in result.findings]
    json.dump(json_safe(issues), out, indent=2)
    out.write("\n")
