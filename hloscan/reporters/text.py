"""Human-readable report: grouped per file, `path:line:col: CODE message`, hints, a summary line."""

from __future__ import annotations

from typing import TextIO

from ..engine import ScanResult
from ..finding import Severity

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.NOTE: "36"}


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour else text


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    by_path: dict[str, list] = {}
    for finding in result.findings:
        by_path.setdefault(finding.span.path, []).append(finding)
    for loaded in result.files:
        if loaded.error is not None:
            out.write(_paint(loaded.error.format(), "31", colour) + "\n")
    for path, findings in by_path.items():
        for f in findings:
            sev = _paint(f.severity.label, _COLOURS[f.severity], colour)
            xla = f" [{f.xla_error}]" if f.xla_error else ""
            out.write(f"{f.span}: {_paint(f.code, '1', colour)} {sev}{xla}: {f.message}\n")
            if f.source is not None:
                out.write(f"    source: {f.source}\n")
            for rel in f.related:
                out.write(f"    related: {rel.span}: {rel.note}\n")
            if f.hint:
                out.write(f"    hint: {f.hint}\n")
    out.write(summary_line(result) + "\n")
    codes = sorted({f.code for f in result.findings if f.code.startswith("HLO") and f.code != "HLO001"})
    for code in codes[:5]:
        out.write(f"For details: hloscan rule {code}\n")


def summary_line(result: ScanResult) -> str:
    counts = {s: 0 for s in Severity}
    for f in result.findings:
        counts[f.severity] += 1
    failed = sum(1 for f in result.files if not f.ok)
    modules = sum(len(f.modules) for f in result.files)
    parts = [f"{len(result.files)} file(s), {modules} module(s)"]
    parts.append(f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), {counts[Severity.NOTE]} note(s)")
    if failed:
        parts.append(f"{failed} file(s) could not be analysed")
    return "; ".join(parts)
