"""Scans many inputs, stage-aware and in parallel processes; results are identical to a single-process run."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TextIO

from hloscan.lint.cache import ResultCache, Session
from hloscan.lint.config import Config
from hloscan.lint.files import printable
from hloscan.lint.engine import ModuleSummary, ScanResult, Selection, run_checks, selected_checks
from hloscan.lint.finding import Finding, Severity, Span
from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.loader import STDIN, LoadedFile, discover, load_file, load_text
from hloscan.lint.registry import Check, lookup, matches
from hloscan.lint.stages import group_stages, plan

log = logging.getLogger(__name__)


# Below this much input, starting worker processes costs more than it saves (a pre-commit run on a few files).
PARALLEL_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class Task:
    path: str
    codes: tuple[str, ...]
    stages: tuple[str, ...] = ()  # the stages of this file's module group in the scanned folder


@dataclass
class Inputs:
    """The files a scan reads, and every file it saw but skipped, with the reason."""

    files: list[str]
    skipped: list[tuple[str, str]]


def collect(paths: Iterable[str]) -> Inputs:
    found = discover(list(paths))
    return Inputs([p for p, reason in found if reason is None], [(p, r) for p, r in found if r is not None])


def scan(paths: Iterable[str], config: Config, *, strict: bool | None = None, jobs: int = 1,
         progress: TextIO | None = None,
         keep_modules: bool = False, inputs: Inputs | None = None, cache: ResultCache | None = None) -> ScanResult:
    """The one scan path of `hloscan check` and `hloscan.check()`: files and dump folders, each check on the
    dump stage it declares (see hloscan.lint.stages), in `jobs` worker processes unless `keep_modules`.
    `inputs` is `collect(paths)` when the caller has already looked at them. With a `cache`, unchanged
    files are answered from it (hloscan.lint.cache); a scan that keeps the modules reads none."""
    started, clock = time.time(), time.monotonic()
    checks = selected_checks(Selection(config.select or (), config.ignore or ()))
    inputs = inputs if inputs is not None else collect(paths)
    tasks = tasks_for(inputs.files, checks, config.ignored_for)
    session = cache.session(config.options(), config.severity, strict) if cache and not keep_modules else None
    result = scan_tasks(tasks, config.options(), config.severity, strict, jobs=jobs, keep_modules=keep_modules,
                        checks_run=[c.code for c in checks], progress=progress, cache=session)
    result.skipped = list(inputs.skipped)
    result.started, result.elapsed = started, time.monotonic() - clock
    return result


def scan_text(text: str, config: Config, *, strict: bool | None = None, path: str = "<text>") -> ScanResult:
    """`scan` for HLO text in memory (one stage: every selected check runs on it)."""
    checks = selected_checks(Selection(config.select or (), config.ignore or ()))
    result = ScanResult(checks_run=[c.code for c in checks])
    try:
        modules = load_text(text, path, strict)
    except HloSyntaxError as exc:
        result.files.append(LoadedFile(path, [], exc))
        return result
    result.files.append(LoadedFile(path, modules, None))
    for module in modules:
        result.findings.extend(run_checks(module, path, checks, config.options(), config.severity))
    result.findings = dedupe(sorted(result.findings, key=Finding.sort_key))
    return result


def default_jobs() -> int:
    """The cores this process may run on: more workers than that only add memory and switching."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def build_tasks(paths: Iterable[str], checks: list[type[Check]],
                ignored_for: Callable[[str], tuple[str, ...]] | None = None) -> list[Task]:
    """One task per input file, holding the checks planned for its stage minus per-path ignores."""
    return tasks_for(collect(paths).files, checks, ignored_for)


def tasks_for(files: list[str], checks: list[type[Check]],
              ignored_for: Callable[[str], tuple[str, ...]] | None = None) -> list[Task]:
    tasks = []
    stages = group_stages(files)
    for path, planned in plan(files, checks).items():
        ignored = ignored_for(path) if ignored_for else ()
        codes = tuple(c.code for c in planned if not any(matches(c, s) for s in ignored))
        tasks.append(Task(path, codes, stages.get(path, ())))
    return tasks


def scan_file(task: Task, options: dict[str, Any], severities: dict[str, Severity], strict: bool | None,
              keep_modules: bool) -> tuple[LoadedFile, list[Finding]]:
    """Load one file and run its checks (runs in a worker process when jobs > 1)."""
    loaded = load_file(task.path, strict)
    checks = [lookup(code) for code in task.codes]
    findings: list[Finding] = []
    for module in loaded.modules:
        findings.extend(run_checks(module, loaded.path, checks, options, severities, task.stages))
    findings.extend(lenient_read_finding(loaded.path, note) for note in loaded.notes)
    if not keep_modules:
        loaded = LoadedFile(loaded.path, [ModuleSummary(m.name, m.line, m.instruction_count)  # type: ignore[misc]
                                          for m in loaded.modules], loaded.error, loaded.notes)
    return loaded, findings


def lenient_read_finding(path: str, note: str) -> Finding:
    """HLO002: part of the file was read leniently; the rest of the run is as usual."""
    return Finding(code="HLO002", name="read-leniently", severity=Severity.NOTE, message=note,
                   span=Span(path, 1, 1), hint="The dump was written with a non-UTF-8 string in its metadata; "
                   "the analysis is unaffected, Python source lines with such names show U+FFFD.")


def scan_tasks(tasks: list[Task], options: dict[str, Any] | None = None,
               severities: dict[str, Severity] | None = None, strict: bool | None = None, jobs: int = 1,
               keep_modules: bool = False, checks_run: list[str] | None = None,
               progress: TextIO | None = None, cache: Session | None = None) -> ScanResult:
    """Run every task; results are assembled in task order, so parallel output equals serial output, and
    a result read from the cache equals the one computed (the cache's key covers all it depends on)."""
    options, severities = options or {}, severities or {}
    bar = Progress(len(tasks), progress)
    try:
        probes = [cache.lookup(t.path, t.codes, t.stages) for t in tasks] if cache is not None else [None] * len(tasks)
        todo = [t for t, probe in zip(tasks, probes) if probe is None or probe.hit is None]
        bar.advance(len(tasks) - len(todo))
        computed = iter(_run(todo, options, severities, strict, jobs, keep_modules, bar))
        outputs = [probe.hit if probe is not None and probe.hit is not None else next(computed) for probe in probes]
    finally:
        bar.close()
    if cache is not None:
        for probe, (loaded, findings) in zip(probes, outputs):
            cache.store(probe, loaded, findings)
        cache.finish()
    result = ScanResult(checks_run=list(checks_run or ()))
    for loaded, findings in outputs:
        result.files.append(loaded)
        result.findings.extend(findings)
    result.findings = dedupe(sorted(result.findings, key=Finding.sort_key))
    return result


def _run(tasks: list[Task], options, severities, strict, jobs: int, keep_modules: bool,
         bar: "Progress") -> list[tuple[LoadedFile, list[Finding]]]:
    """Scan the tasks here, or in worker processes when there is enough input to pay for starting them."""
    jobs = min(jobs, default_jobs(), len(tasks))
    # Standard input can be read by this process only.
    if (jobs <= 1 or keep_modules or _total_bytes(tasks) < PARALLEL_MIN_BYTES
            or any(t.path == STDIN for t in tasks)):
        outputs = []
        for task in tasks:
            bar.reading(task.path)
            outputs.append(scan_file(task, options, severities, strict, keep_modules))
            bar.advance()
        return outputs
    bar.reading(None, workers=jobs)
    return _parallel(tasks, options, severities, strict, jobs, bar)


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
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(batches)), initializer=_worker_started,
                               initargs=(os.getpid(),))
    try:
        futures = [pool.submit(scan_batch, batch, options, severities, strict) for batch in batches]
        for future, batch in zip(futures, batches):
            future.add_done_callback(lambda _f, n=len(batch): bar.advance(n))
        outputs = [out for f in futures for out in f.result()]
    except BaseException:
        # Ctrl-C, SIGTERM (raised as SystemExit by the CLI) or a broken worker: stop now, not after the
        # queued work (leaving the `with` block of an executor waits for every batch to finish).
        _stop(pool)
        raise
    pool.shutdown()
    return outputs


def _stop(pool: ProcessPoolExecutor) -> None:
    # The pool's feeder thread may still write to a killed worker's pipe. With SIGPIPE at its default (the CLI
    # sets it so that `hloscan ... | head` ends quietly) that write killed the whole process: Ctrl-C exited
    # -13 instead of 130, once in CI. Ignored, the write fails in that thread and the stop goes on.
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    kill = getattr(pool, "kill_workers", None)  # Python 3.14+
    if kill is not None:
        kill()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()  # their work is thrown away: nothing to clean up
    pool.shutdown(wait=False, cancel_futures=True)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _worker_started(parent: int) -> None:
    """Worker initializer: Ctrl-C is the parent's to handle, and a worker dies with its parent (kill -9,
    SIGTERM, a crash) instead of scanning on as an orphan. The workers already use the cores, so none
    forks a reader of its own for a big file (hlo/forkread.py)."""
    os.environ["HLOSCAN_NO_FORK"] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler, inherited through fork
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


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
    """A one-line progress display on a terminal stream, shown once the work has taken over a second: files
    done, and the file being read (one big dump can take many seconds by itself)."""

    DELAY = 1.0
    TICK = 0.25

    def __init__(self, total: int, stream: TextIO | None):
        self.total, self.done = total, 0
        self.stream = stream if stream is not None and _isatty(stream) else None
        self.start = time.monotonic()
        self.shown = False
        self.current = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.stream is not None:
            # Named with hlo.forkread's OWN_THREAD_PREFIX: it holds nothing a forked reader needs.
            self._ticker = threading.Thread(target=self._tick, name="hloscan-progress", daemon=True)
            self._ticker.start()

    def reading(self, path: str | None, workers: int = 1) -> None:
        """Name what is being worked on: one file (with its size), or the worker count."""
        if path is None:
            self.current = f"{workers} workers"
        else:
            self.current = f"parsing {printable(os.path.basename(path) or path)}{_size_label(path)}"
        self._draw()  # past the delay, name the new file at once rather than at the next tick

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def _tick(self) -> None:
        while not self._stop.wait(self.TICK):
            self._draw()

    def _draw(self) -> None:
        if self.stream is None or time.monotonic() - self.start < self.DELAY:
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        text = f"hloscan [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files"
        if self.current and self.done < self.total:
            text += f", {self.current}"
        with self._lock:
            if self._stop.is_set() and not self.shown:
                return
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
            self.shown = True

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self.shown = False


def _size_label(path: str) -> str:
    try:
        size = os.path.getsize(path)
    except (OSError, ValueError):
        return ""
    return f" ({size / 1e6:.0f} MB)" if size >= 10**6 else ""


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
