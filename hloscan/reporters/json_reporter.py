"""One JSON document: {"version": 1, "files": [...], "findings": [...]}, then (added later, so readers of the
first three keys are unaffected) "skipped", "summary", "hloscan_version" and "timing"."""

from __future__ import annotations

import json
from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import json_safe
from hloscan.lint.finding import Severity
from hloscan.version import __version__


def file_entry(loaded) -> dict:
    error = None
    if loaded.error is not None:
        error = {"line": loaded.error.line, "col": loaded.error.col, "message": loaded.error.message}
    return {"path": loaded.path, "ok": loaded.ok, "error": error}


def summary(result: ScanResult) -> dict:
    """The counts of the text report's summary line."""
    by_severity = {s.label: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.NOTE)}
    for f in result.findings:
        by_severity[f.severity.label] += 1
    return {
        "files": len(result.files),
        "modules": sum(len(f.modules) for f in result.files),
        "files_failed": sum(1 for f in result.files if not f.ok),
        "files_skipped": len(result.skipped),
        "findings": len(result.findings),
        **{f"{label}s": n for label, n in by_severity.items()},
        "checks_run": list(result.checks_run),
        "complete": not result.incomplete and not result.nothing_analysed,
    }


def timing(result: ScanResult) -> dict:
    return {"seconds": None if result.elapsed is None else round(result.elapsed, 3)}


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    doc = {
        "version": 1,
        "files": [file_entry(f) for f in result.files],
        "findings": [f.to_dict() for f in result.findings],
        "skipped": [{"path": path, "reason": reason} for path, reason in result.skipped],
        "summary": summary(result),
        "hloscan_version": __version__,
        "timing": timing(result),
    }
    json.dump(json_safe(doc), out, indent=2)
    out.write("\n")
