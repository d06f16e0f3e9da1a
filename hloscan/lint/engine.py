"""Runs the selected checks on parsed modules; a crashing check becomes an HLO900 finding, not a crash."""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

from hloscan.lint.context import Context
from hloscan.lint.finding import Finding, Severity, Span
from hloscan.hlo.ir import Module
from hloscan.hlo.loader import LoadedFile
from hloscan.lint.registry import Check, all_checks, matches

log = logging.getLogger(__name__)


@dataclass
class Selection:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def includes(self, check: type[Check]) -> bool:
        if self.select and not any(matches(check, s) for s in self.select):
            return False
        return not any(matches(check, s) for s in self.ignore)


@dataclass(frozen=True)
class ModuleSummary:
    """What a reporter needs of a module scanned in another process or read from the result cache (the IR
    itself is not sent back nor kept)."""

    name: str
    line: int
    instruction_count: int


@dataclass
class ScanResult:
    files: list[LoadedFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    # (path, reason) of every file seen but not scanned: dump side files, duplicates, dangling symlinks...
    skipped: list[tuple[str, str]] = field(default_factory=list)
    started: float | None = None  # wall-clock start (time.time()) and duration of the scan, for reports
    elapsed: float | None = None

    @property
    def incomplete(self) -> bool:
        return any(not f.ok for f in self.files) or any(f.code == "HLO900" for f in self.findings)

    @property
    def nothing_analysed(self) -> bool:
        """No module was read and no file failed: an empty folder, a typo'd glob, only side files. A CI
        job pointed at the wrong folder must not pass."""
        return not any(f.modules for f in self.files) and not self.incomplete


def selected_checks(selection: Selection) -> list[type[Check]]:
    return [c for c in all_checks() if selection.includes(c)]


def run_checks(module: Module, path: str, checks: Iterable[type[Check]], options: dict[str, Any] | None = None,
               severities: dict[str, Severity] | None = None, group_stages: tuple[str, ...] = ()) -> list[Finding]:
    ctx = Context(module, path, options, severities, group_stages)
    findings: list[Finding] = []
    for check in checks:
        try:
            findings.extend(check().run(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken check must not stop the lint
            log.debug("check %s crashed", check.code, exc_info=True)
            findings.append(_crash_finding(check, module, path, exc))
    return sorted(findings, key=Finding.sort_key)


def exception_text(exc: BaseException) -> str:
    """`ValueError: ... at liveness.py:398`: an exception and the line that raised it, in one line."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    origin = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
    return f"{type(exc).__name__}: {exc}{origin}"


def _crash_finding(check: type[Check], module: Module, path: str, exc: Exception) -> Finding:
    return Finding(
        code="HLO900",
        name="check-crashed",
        severity=Severity.ERROR,
        message=f"check {check.code} ({check.name}) crashed: {exception_text(exc)}",
        span=Span(path, module.line, 1),
        module=module.name,
        hint="The analysis of this module is incomplete; please report this with the dump.",
        data={"check": check.code, "exception": type(exc).__name__},
    )
