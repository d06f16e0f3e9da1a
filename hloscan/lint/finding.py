"""The Finding type every check yields and every reporter reads: code, severity, location, message, data."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping


class Severity(enum.IntEnum):
    """Ordered like shellcheck's levels; maps 1:1 onto SARIF note/warning/error."""

    NOTE = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    def __str__(self) -> str:
        return self.label  # "error", as every report prints it (an IntEnum would print "3")

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected error, warning or note)") from None


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based location in a dump file."""

    path: str
    line: int
    col: int = 1
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """The user's Python source location, resolved from the instruction's metadata."""

    file: str
    line: int
    function: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Related:
    """A secondary location (SARIF relatedLocations), e.g. where an offloaded tensor starts."""

    span: Span
    note: str


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One instruction on a finding's path (the value at `shape_index` of its result)."""

    computation: str
    instruction: str
    shape_index: tuple[int, ...] = ()


# The keys of `Finding.data` that the framework itself understands. A check that has a path of instructions
# to show writes it under TRACE_KEY (a list of {"computation", "instruction", "shape_index", ...}) and may name
# the instruction its analysis started from under START_KEY / START_COMPUTATION_KEY; the text reporter prints
# the path and `hloscan graph --finding N` draws it. Every other key is the check's own, for JSON readers.
TRACE_KEY = "path"
START_KEY = "starting_from_in_dump"
START_COMPUTATION_KEY = "starting_from_computation"


@dataclass(frozen=True, slots=True)
class Finding:
    code: str  # "HLO101"
    name: str  # "host-offload-output-mismatch"
    severity: Severity
    message: str  # one line, facts only
    span: Span
    module: str | None = None
    computation: str | None = None
    instruction: str | None = None
    hint: str | None = None
    xla_error: str | None = None  # "E1200" when the finding predicts an XLA error code
    source: SourceLocation | None = None
    related: tuple[Related, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def trace(self) -> tuple[TraceStep, ...]:
        """The path of instructions the check recorded (empty when it has none)."""
        steps = self.data.get(TRACE_KEY) if self.data else None
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            return ()
        return tuple(TraceStep(str(s.get("computation", "?")), str(s.get("instruction", "?")),
                               tuple(s.get("shape_index") or ())) for s in steps)

    @property
    def start(self) -> tuple[str | None, str] | None:
        """(computation or None, instruction) the analysis started from, when the check names one."""
        name = self.data.get(START_KEY) if self.data else None
        return None if name is None else (self.data.get(START_COMPUTATION_KEY), str(name))

    @property
    def path(self) -> str:
        return self.span.path

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def col(self) -> int:
        return self.span.col

    def render(self) -> str:
        """The finding as `hloscan check` prints it: its first line, then path, source, hint."""
        xla = f" [{self.xla_error}]" if self.xla_error else ""
        lines = [f"{self.path}:{self.line}:{self.col}: {self.code} {self.severity.label}{xla}: {self.message}"]
        if self.trace:
            lines.append("    path: " + " -> ".join(s.instruction for s in self.trace))
        if self.source is not None:
            lines.append(f"    source: {self.source.file}:{self.source.line}")
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

    def key(self) -> tuple[str, int]:
        """What tests compare: the code and the dump line."""
        return (self.code, self.span.line)

    def sort_key(self) -> tuple:
        return (self.span.path, self.span.line, self.span.col, self.code)

    def baseline_key(self) -> tuple[str, str | None, str | None, str | None]:
        """Identity that survives line shifts and re-dumps."""
        return (self.code, self.module, self.computation, self.instruction)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.span.path,
            "code": self.code,
            "name": self.name,
            "xla_error": self.xla_error,
            "severity": self.severity.label,
            "message": self.message,
            "module": self.module,
            "computation": self.computation,
            "instruction": self.instruction,
            "line": self.span.line,
            "col": self.span.col,
            "hint": self.hint,
            "source": None if self.source is None else {"file": self.source.file, "line": self.source.line},
            "related": [
                {"path": r.span.path, "line": r.span.line, "col": r.span.col, "note": r.note} for r in self.related
            ],
            "data": dict(self.data),
        }
