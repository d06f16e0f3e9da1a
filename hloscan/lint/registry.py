"""The check registry: every check's stable code, kebab-case name, severity, options and docs, validated at import."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator

from hloscan.lint.finding import Finding, Related, Severity, SourceLocation, Span

if TYPE_CHECKING:
    from hloscan.lint.context import Context
    from hloscan.hlo.ir import Computation, Instruction

CODE_RE = re.compile(r"^HLO\d{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_SECTIONS = ("## What it flags", "## Why it matters", "## Example", "## Fix")

# Retired codes and names -> their replacements (a code is never reused).
REDIRECTS: dict[str, str] = {}


@dataclass(frozen=True)
class Option:
    """A per-check option settable from config or the command line."""

    type: type
    default: Any
    help: str
    choices: tuple | None = None

    def coerce(self, key: str, value: Any) -> Any:
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise ValueError(f"option {key!r} must be {self.type.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"option {key!r} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        return value


class Check:
    """Base class: subclasses declare code/name/severity and implement run(ctx) yielding findings."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    xla_error: ClassVar[str | None] = None
    opcodes: ClassVar[frozenset[str] | None] = None
    message: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    # Which dump stage the check wants when a folder holds several (see hloscan.stages).
    stage: ClassVar[str] = "any"

    def run(self, ctx: "Context") -> Iterator[Finding]:
        raise NotImplementedError

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0]

    @classmethod
    def docs(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_section(cls, title: str) -> str:
        """The text under `## title` in the docstring."""
        text = cls.docs()
        m = re.search(r"^## " + re.escape(title) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
        return m.group(1).strip() if m else ""

    def finding(self, ctx: "Context", comp: "Computation | None", inst: "Instruction | None", message: str,
                hint: str | None = None, data: dict | None = None, related: tuple[Related, ...] = (),
                severity: Severity | None = None) -> Finding:
        """Fill code, name, severity, location and Python source from the instruction (pyflakes' report)."""
        line = inst.line if inst is not None else (comp.line if comp is not None else ctx.module.line)
        col = inst.col if inst is not None else 1
        source = ctx.source_of(inst) if inst is not None else None
        return Finding(
            code=self.code,
            name=self.name,
            severity=severity or ctx.severity_for(self),
            message=message,
            span=Span(ctx.path, line, col),
            module=ctx.module.name,
            computation=comp.name if comp is not None else None,
            instruction=inst.name if inst is not None else None,
            hint=hint,
            xla_error=self.xla_error,
            source=None if source is None else SourceLocation(source.file, source.line, source.function),
            related=related,
            data=data or {},
        )


_CHECKS: dict[str, type[Check]] = {}


def register(cls: type[Check]) -> type[Check]:
    """Validate and add a check; a badly declared check fails on import, not in review."""
    problems = []
    if not CODE_RE.match(getattr(cls, "code", "")):
        problems.append("code must match HLO###")
    if not NAME_RE.match(getattr(cls, "name", "")):
        problems.append("name must be kebab-case")
    if cls.code in _CHECKS or cls.code in REDIRECTS:
        problems.append(f"code {cls.code} already used")
    if any(c.name == cls.name for c in _CHECKS.values()):
        problems.append(f"name {cls.name} already used")
    docs = cls.docs()
    missing = [s for s in REQUIRED_SECTIONS if s not in docs]
    if missing:
        problems.append("docstring lacks " + ", ".join(missing))
    if problems:
        raise TypeError(f"{cls.__name__}: " + "; ".join(problems))
    _CHECKS[cls.code] = cls
    return cls


def all_checks() -> list[type[Check]]:
    from hloscan import checks  # noqa: F401  (imports every check module, which registers it)

    return sorted(_CHECKS.values(), key=lambda c: c.code)


def lookup(code_or_name: str) -> type[Check] | None:
    key = REDIRECTS.get(code_or_name, code_or_name)
    for check in all_checks():
        if key.upper() == check.code or key.lower() == check.name:
            return check
    return None


def matches(check: type[Check], selector: str) -> bool:
    """A selector is a code, a code prefix (HLO1, HLO), or a name."""
    selector = selector.strip()
    return check.code.startswith(selector.upper()) or check.name == selector.lower()


# Tool-level codes that are not checks but appear as findings.
@dataclass(frozen=True)
class ToolCode:
    code: str
    name: str
    summary: str
    severity: Severity = Severity.ERROR


TOOL_CODES = {
    "HLO001": ToolCode("HLO001", "syntax-error", "The input could not be parsed as HLO text."),
    "HLO900": ToolCode("HLO900", "check-crashed", "A check raised an internal error on this module."),
}

ProgressCallback = Callable[[int, int], None]
