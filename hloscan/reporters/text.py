"""Human-readable report: grouped per file, `path:line:col: CODE message`, hints, a summary line."""

from __future__ import annotations

from typing import Any, TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import neutralised, printable
from hloscan.lint.finding import Finding, Severity

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.NOTE: "36"}


def clean(text: Any) -> str:
    return neutralised(str(text)).replace("\n", "\\n")


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour else text


def path_line(finding: Finding, limit: int = 8) -> str | None:
    """`a -> b{1} -> c` from a finding's trace, if it has one."""
    if not finding.trace:
        return None
    names = []
    for step in finding.trace:
        index = step.shape_index
        names.append(step.instruction + ("{" + ",".join(map(str, index)) + "}" if index else ""))
    if len(names) > limit:
        names = names[: limit // 2] + [f"... {len(names) - limit} more ..."] + names[-(limit // 2) :]
    return " -> ".join(names)


def render(result: ScanResult, out: TextIO, colour: bool = False, summary: bool = True) -> None:
    for loaded in result.files:
        if loaded.error is not None:
            out.write(_paint(printable(loaded.error.format()), "31", colour) + "\n")
    # `[N]` is the finding's place in the sorted list: the N of `hloscan graph PATHS --finding N`.
    for number, f in enumerate(result.findings, 1):
        sev = _paint(f.severity.label, _COLOURS[f.severity], colour)
        xla = f" [{f.xla_error}]" if f.xla_error else ""
        out.write(f"{clean(f.span)}: [{number}] {_paint(f.code, '1', colour)} {sev}{xla}: {clean(f.message)}\n")
        path = path_line(f)
        if path:
            out.write(f"    path: {clean(path)}\n")
        if f.source is not None:
            out.write(f"    source: {clean(f.source)}\n")
        for rel in f.related:
            out.write(f"    related: {clean(rel.span)}: {clean(rel.note)}\n")
        if f.hint:
            out.write(f"    hint: {clean(f.hint)}\n")
    if not summary:
        return
    out.write(summary_line(result) + "\n")
    codes = sorted({f.code for f in result.findings if f.code.startswith("HLO") and f.code != "HLO001"})
    for code in codes[:5]:
        out.write(f"For details: hloscan rule {code}\n")
    if any(f.code != "HLO001" for f in result.findings):
        out.write("For a diagram of finding N: hloscan graph PATH... --finding N -o finding.svg\n")


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
    if result.skipped:
        parts.append(skipped_summary(result.skipped))
    return "; ".join(parts)


# What every --xla_dump_to folder holds besides its modules (buffer assignments, memory reports, other
# passes' files): counted, not itemised, so the line names only what a user may want to look at.
ROUTINE_SKIPS = ("not an HLO file name", "not an HLO module (dump side file)")


def skipped_summary(skipped: list[tuple[str, str]]) -> str:
    """`1 skipped: 1 dangling symlink (and 348 other dump files)`: unusual reasons itemised, most common first;
    a dump folder's routine side files only counted."""
    reasons: dict[str, int] = {}
    routine = 0
    for _, reason in skipped:
        if reason.startswith(ROUTINE_SKIPS):
            routine += 1
            continue
        key = reason.split(":", 1)[0]  # "unreadable folder: Permission denied" counts as "unreadable folder"
        reasons[key] = reasons.get(key, 0) + 1
    parts = [f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
    if not parts:
        return f"{routine} other dump file(s) skipped"
    unusual = sum(reasons.values())
    tail = f" (and {routine} other dump file(s))" if routine else ""
    return f"{unusual} skipped: " + ", ".join(parts) + tail
