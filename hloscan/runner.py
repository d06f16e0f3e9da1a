"""Scans many inputs, stage-aware and in parallel processes; results are identical to a single-process run."""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TextIO

from .engine import ScanResult, run_checks
from .finding import Finding, Severity
from .loader import LoadedFile, discover, load_file
from .registry import Check, lookup, matches
from .stages import plan

log = logging.getLogger(__name__)


# Below this much input, starting worker processes costs more than it saves (a pre-commit run on a few files).
PARALLEL_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class ModuleSummary:
    """What a reporter needs of a module scanned in another process (the IR itself is not sent back)."""

    name: str
    line: int
    instruction_count: int


@dataclass(frozen=True)
class Task:
    path: str
    codes: tuple[str, ...]


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def build_tasks(paths: Iterable[str], checks: list[type[Check]],
                ignored_for: Callable[[str], tuple[str, ...]] | None = None) -> list[Task]:
    """One task per input file, holding the checks planned for its stage minus per-path ignores."""
    files = [path for path, skipped in discover(list(paths)) if skipped is None]
    tasks = []
    for path, planned in plan(files, checks).items():
        ignored = ignored_for(path) if ignored_for else ()
        codes = tuple(c.code for c in planned if not any(matches(c, s) for s in ignored))
        tasks.append(Task(path, codes))
    return tasks


def scan_file(task: Task, options: dict[str, Any], severities: dict[str, Severity], strict: bool | None,
              keep_modules: bool) -> tuple[LoadedFile, list[Finding]]:
    """Load one file and run its checks (runs in a worker process when jobs > 1)."""
    loaded = load_file(task.path, strict)
    checks = [lookup(code) for code in task.codes]
    findings: list[Finding] = []
    for module in loaded.modules:
        findings.extend(run_checks(module, loaded.path, checks, options, severities))
    if not keep_modules:
        loaded = LoadedFile(loaded.path, [ModuleSummary(m.name, m.line, m.instruction_count)  # type: ignore[misc]
                                          for m in loaded.modules], loaded.error)
    return loaded, findings


def scan_tasks(tasks: list[Task], options: dict[str, Any] | None = None,
               severities: dict[str, Severity] | None = None, strict: bool | None = None, jobs: int = 1,
               keep_modules: bool = False, checks_run: list[str] | None = None,
               progress: TextIO | None = None) -> ScanResult:
    """Run every task; results are assembled in task order, so parallel output equals serial output."""
    options, severities = options or {}, severities or {}
    bar = Progress(len(tasks), progress)
    if jobs <= 1 or len(tasks) <= 1 or keep_modules or _total_bytes(tasks) < PARALLEL_MIN_BYTES:
        outputs = []
        for task in tasks:
            outputs.append(scan_file(task, options, severities, strict, keep_modules))
            bar.advance()
    else:
        outputs = _parallel(tasks, options, severities, strict, jobs, bar)
    bar.close()
    result = ScanResult(checks_run=list(checks_run or ()))
    for loaded, findings in outputs:
        result.files.append(loaded)
        result.findings.extend(findings)
    result.findings = dedupe(sorted(result.findings, key=Finding.sort_key))
    return result


def _total_bytes(tasks: list[Task]) -> int:
    total = 0
    for task in tasks:
        try:
            total += os.path.getsize(task.path)
        except OSError:
            pass
    return total


def _parallel(tasks, options, severities, strict, jobs, bar) -> list:
    batches = _batches(tasks, jobs)
    with ProcessPoolExecutor(max_workers=min(jobs, len(batches))) as pool:
        futures = [pool.submit(scan_batch, batch, options, severities, strict) for batch in batches]
        for future, batch in zip(futures, batches):
            future.add_done_callback(lambda _f, n=len(batch): bar.advance(n))
        return [out for f in futures for out in f.result()]


def scan_batch(tasks: list[Task], options, severities, strict) -> list[tuple[LoadedFile, list[Finding]]]:
    return [scan_file(t, options, severities, strict, False) for t in tasks]


def _batches(tasks: list[Task], jobs: int) -> list[list[Task]]:
    # A few contiguous batches per worker: one future per file costs more in IPC than small files take
    # to scan, while several batches per worker still even out files of very different sizes.
    size = max(1, -(-len(tasks) // (jobs * 8)))
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop exact repeats (the same finding reached through two inputs) while keeping order."""
    seen: set[Finding] = set()
    out = []
    for f in findings:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return out


class Progress:
    """A one-line progress bar on a terminal stream, shown only once the work has taken over a second."""

    DELAY = 1.0

    def __init__(self, total: int, stream: TextIO | None):
        self.total, self.done = total, 0
        self.stream = stream if stream is not None and _isatty(stream) else None
        self.start = time.monotonic()
        self.shown = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.stream is None or time.monotonic() - self.start < self.DELAY:
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        self.stream.write(f"\rhloscan [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
