"""Runs one input through every hloscan stage and reports broken invariants, stage times and memory."""

from __future__ import annotations

import io
import json
import time
import traceback
import tracemalloc
from dataclasses import dataclass, field

from hloscan.lint.engine import ScanResult, run_checks
from hloscan.hlo.graph import build_graph
from hloscan.hlo.loader import LoadedFile, decode
from hloscan.hlo.parser import HloSyntaxError, parse_text
from hloscan.lint.registry import all_checks

# Small inputs are dominated by fixed costs (interpreter, lark tables), so rates use at least this size.
MIN_RATE_BYTES = 4096
# Reporters whose output must be one JSON document.
JSON_REPORTERS = frozenset({"json", "sarif"})


@dataclass
class Failure:
    """One broken invariant: which stage, who owns the code, and what happened."""

    stage: str
    owner: str
    detail: str

    def signature(self) -> str:
        """What identifies the bug for deduplication: stage plus the last line of the traceback."""
        last = self.detail.strip().splitlines()[-1] if self.detail.strip() else ""
        return f"{self.stage}|{last[:160]}"


@dataclass
class Outcome:
    """What happened to one input."""

    size: int
    failures: list[Failure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    parsed: bool = False
    error: HloSyntaxError | None = None

    @property
    def ms_per_kb(self) -> float:
        return 1000 * sum(self.seconds.values()) / (max(self.size, MIN_RATE_BYTES) / 1024)


def _traceback() -> str:
    return traceback.format_exc(limit=-6)


def _owner_of(detail: str) -> str:
    """The hloscan file the innermost hloscan frame of a traceback is in (who should fix it)."""
    owner = "hloscan"
    for line in detail.splitlines():
        if 'File "' in line and "/hloscan/" in line:
            owner = line.split("/hloscan/", 1)[1].split('"', 1)[0]
    return owner


def check_error(exc: HloSyntaxError, text: str | None, path: str) -> str | None:
    """Why an HLO001 error is not a clear, well-placed one (None when it is)."""
    lines = (text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1) if text is not None else None
    if exc.code != "HLO001":
        return f"code {exc.code!r} is not HLO001"
    if not isinstance(exc.line, int) or not isinstance(exc.col, int) or exc.line < 1 or exc.col < 1:
        return f"bad position {exc.line!r}:{exc.col!r}"
    if lines is not None and exc.line > lines:
        return f"line {exc.line} is past the end of the input ({lines} lines)"
    if not exc.message.strip():
        return "empty message"
    formatted = exc.format()
    if not formatted.startswith(f"{path}:{exc.line}:{exc.col}: HLO001 "):
        return f"format() lacks path:line:col: {formatted[:120]!r}"
    return None


class _Timer:
    def __init__(self, outcome: Outcome, stage: str):
        self.outcome, self.stage = outcome, stage

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.outcome.seconds[self.stage] = self.outcome.seconds.get(self.stage, 0.0) + time.perf_counter() - self.start
        return False


def _guard(outcome: Outcome, stage: str, func, *args):
    """Run one stage; an exception other than HloSyntaxError is a failure owned by the raising file."""
    with _Timer(outcome, stage):
        try:
            return func(*args), None
        except HloSyntaxError as exc:
            return None, exc
        except BaseException as exc:  # noqa: BLE001 - the whole point is to catch everything
            if isinstance(exc, KeyboardInterrupt):
                raise
            detail = _traceback()
            outcome.failures.append(Failure(stage, _owner_of(detail), detail))
            return None, None


def run_input(data: bytes, path: str = "fuzz.hlo", downstream: bool = True) -> Outcome:
    """Decode, parse (fast and strict), build graphs, run every check and every reporter on one input."""
    outcome = Outcome(len(data))
    text, err = _guard(outcome, "decode", decode, data, path)
    if err is not None:
        _record_error(outcome, "decode", err, None, path)
        return outcome
    if text is None:
        return outcome
    fast, fast_err = _guard(outcome, "parse-fast", parse_text, text, path, False)
    strict, strict_err = _guard(outcome, "parse-strict", parse_text, text, path, True)
    for stage, e in (("parse-fast", fast_err), ("parse-strict", strict_err)):
        if e is not None:
            _record_error(outcome, stage, e, text, path)
    _compare_paths(outcome, fast, strict)
    modules = fast if fast is not None else strict
    if modules is None or not downstream:
        _run_reporters(outcome, LoadedFile(path, error=fast_err or strict_err), [])
        return outcome
    outcome.parsed = True
    for module in modules:
        _guard(outcome, "graph", build_graph, module)
    findings = []
    for module in modules:
        found, _ = _guard(outcome, "checks", run_checks, module, path, all_checks())
        findings.extend(found or [])
    for f in findings:
        if f.code == "HLO900":
            outcome.failures.append(Failure("checks", f"check {f.data.get('check')}", f.message))
    _run_reporters(outcome, LoadedFile(path, modules), findings)
    return outcome


def _record_error(outcome: Outcome, stage: str, exc: HloSyntaxError, text: str | None, path: str) -> None:
    outcome.error = outcome.error or exc
    problem = check_error(exc, text, path)
    if problem:
        outcome.failures.append(Failure(stage, "parser.py", f"unclear error: {problem}\n{exc.format()[:400]}"))


def _compare_paths(outcome: Outcome, fast, strict) -> None:
    """The fast path must never accept less than the strict grammar, nor read the same text differently."""
    if strict is not None and fast is None:
        outcome.failures.append(Failure("parse-fast", "fastpath.py", "strict parse succeeded but the default failed"))
    elif strict is not None and fast != strict:
        outcome.failures.append(Failure("parse-fast", "fastpath.py", "fast and strict paths built different IR"))


def _run_reporters(outcome: Outcome, loaded: LoadedFile, findings: list) -> None:
    from hloscan.reporters import REPORTERS

    result = ScanResult(files=[loaded], findings=findings, checks_run=[c.code for c in all_checks()])
    for name, render in sorted(REPORTERS.items()):
        out = io.StringIO()
        _, _ = _guard(outcome, f"reporter:{name}", render, result, out, False)
        problem = reporter_output_problem(name, out.getvalue())
        if problem:
            outcome.failures.append(Failure(f"reporter:{name}", f"reporters ({name})", problem))


def reporter_output_problem(name: str, text: str) -> str | None:
    """Why a reporter's output is malformed for its format (None when it is well-formed)."""
    if name in JSON_REPORTERS:
        try:
            json.loads(text)
        except ValueError as exc:
            return f"output is not JSON: {exc}"
    if name == "github":
        # Workflow commands are one line each; a raw newline in a message would start a bogus line.
        bad = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("::")]
        if bad and any(ln.startswith("::") for ln in text.splitlines()):
            return f"line outside a workflow command: {bad[0][:120]!r}"
    return None


def peak_memory(data: bytes, path: str = "fuzz.hlo") -> int:
    """Peak bytes traced while decoding, parsing (default path) and building graphs for one input."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            for module in parse_text(decode(data, path), path):
                build_graph(module)
        except HloSyntaxError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def warm_up() -> None:
    """Build every lark parser and import every check once, so the first timed input pays no set-up."""
    from hloscan.hlo.grammar import START_RULES, parser

    for start in START_RULES:
        parser(start)
    from .seeds import BUILTIN

    run_input(BUILTIN)
