"""The check registry: every check's stable code, kebab-case name, severity, options and docs, validated at import."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator

from hloscan.lint.finding import Finding, Related, Severity, SourceLocation, Span

from hloscan.lint.context import Context

if TYPE_CHECKING:
    from hloscan.hlo.ir import Computation, Instruction

CODE_RE = re.compile(r"^HLO\d{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_SECTIONS = ("## What it flags", "## Why it matters", "## Example", "## Fix")

# Retired codes and names -> their replacements (a code is never reused).
REDIRECTS: dict[str, str] = {}


@dataclass(frozen=True)
class Option:
    """A setting a check or a rule family reads: from config, the command line or `hloscan.check(...)`.

    Family options (e.g. `tpu`) are run-wide: a config key at the top of `[tool.hloscan]` and a
    command-line flag (`--tpu`), both generated from this declaration. Check options live in
    `[tool.hloscan.checks.<name>]`.
    """

    type: type
    default: Any
    help: str
    choices: tuple | None = None
    minimum: int | None = None  # for int options
    item_type: type | None = None  # for tuple options: the element type (`--host-outputs 0,2`)
    normalize: Callable[[Any], Any] | None = None  # canonical spelling of a value (TPU aliases)
    metavar: str | None = None

    def coerce(self, key: str, value: Any) -> Any:
        """Validate a value from config or the API; raises ValueError naming the key."""
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.type is tuple:
            value = self._items(key, value)
        if self.normalize is not None and isinstance(value, str):
            value = self.normalize(value) or value
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise ValueError(f"option {key!r} must be {self.type.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"option {key!r} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"option {key!r} must be at least {self.minimum}, got {value!r}")
        return value

    def parse_text(self, key: str, text: str) -> Any:
        """A command-line string as a value (`0,2` for tuples; numbers for int/float)."""
        if self.type in (int, float):
            try:
                return self.coerce(key, self.type(text))
            except ValueError:
                raise ValueError(f"option {key!r} must be {self.type.__name__}, got {text!r}") from None
        return self.coerce(key, text)

    def _items(self, key: str, value: Any) -> tuple:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"option {key!r} must be a list, got {value!r}")
        if self.item_type is None:
            return tuple(value)
        try:
            return tuple(self.item_type(v) for v in value if not isinstance(v, bool))
        except (TypeError, ValueError):
            raise ValueError(f"option {key!r} must be a list of {self.item_type.__name__}, got {value!r}") from None


@dataclass(frozen=True)
class Family:
    """A rule family, declared once: its code prefix, the XLA errors it predicts, its run-wide options.

    ruff's `rules/<family>/` with its settings, and its one code table: everything the framework,
    the reporters and the CLI need to know about a family comes from here.
    """

    prefix: str  # "HLO2": every code of the family starts with it
    name: str  # kebab-case; also the SARIF tag of its rules
    title: str
    xla_errors: tuple[str, ...] = ()
    options: dict[str, Option] = field(default_factory=dict)
    # The files besides a dump that the family's analyses may read for it (path -> candidate paths, present
    # or not): the result cache (hloscan.lint.cache) fingerprints them, so a report that appears, changes or
    # goes away beside an unchanged dump is not answered from the cache.
    side_files: Callable[[str], Iterable[str]] | None = None


class Check:
    """Base class: subclasses declare code/name/severity and implement run(ctx) yielding findings."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    family: ClassVar[Family]
    xla_error: ClassVar[str | None] = None
    options: ClassVar[dict[str, Option]] = {}  # the check's own options; run-wide ones are the family's
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
_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Declare a rule family; options of the same name in two families must be the same declaration."""
    problems = []
    if not re.match(r"^HLO\d$", family.prefix):
        problems.append("prefix must be HLO followed by one digit")
    if not NAME_RE.match(family.name):
        problems.append("name must be kebab-case")
    other = _FAMILIES.get(family.prefix)
    if other is not None and other is not family:
        problems.append(f"prefix {family.prefix} already used by {other.name}")
    for key, opt in family.options.items():
        for known in _FAMILIES.values():
            if key in known.options and known.options[key] != opt:
                problems.append(f"option {key!r} is declared differently by family {known.name}")
    if problems:
        raise TypeError(f"family {family.name}: " + "; ".join(problems))
    _FAMILIES[family.prefix] = family
    return family


def families() -> list[Family]:
    return sorted(_FAMILIES.values(), key=lambda f: f.prefix)


def family_options() -> dict[str, Option]:
    """Every run-wide option of every family, by key: the config keys and CLI flags generated from them."""
    out: dict[str, Option] = {}
    for family in families():
        out.update(family.options)
    return out


def register(cls: type[Check]) -> type[Check]:
    """Validate and add a check; a badly declared check fails on import, not in review."""
    problems = []
    if not CODE_RE.match(getattr(cls, "code", "")):
        problems.append("code must match HLO###")
    if not NAME_RE.match(getattr(cls, "name", "")):
        problems.append("name must be kebab-case")
    family = getattr(cls, "family", None)
    if not isinstance(family, Family) or _FAMILIES.get(family.prefix) is not family:
        problems.append("family must be a registered Family")
    elif not cls.code.startswith(family.prefix):
        problems.append(f"code must start with its family prefix {family.prefix}")
    elif cls.xla_error is not None and cls.xla_error not in family.xla_errors:
        problems.append(f"xla_error {cls.xla_error} is not one of its family's {family.xla_errors}")
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
    """Every registered check. Checks register when `hloscan.checks` is imported, which the entry points
    (the `hloscan` API module and the CLI) do: the framework itself never imports a check."""
    return sorted(_CHECKS.values(), key=lambda c: c.code)


def predicting(xla_error: str) -> list[type[Check]]:
    """The registered checks whose `xla_error` is this XLA error code (E1200, ...)."""
    return [c for c in all_checks() if c.xla_error == xla_error]


def related_to(xla_error: str) -> list[type[Check]]:
    """The checks, predicting no XLA error themselves, of the families whose first (main) declared error this
    is: HLO301, padding waste, in the E0102 layout family; HLO202, scoped-vmem-tight, for E1001."""
    return [c for c in all_checks() if c.family.xla_errors[:1] == (xla_error,) and c.xla_error is None]


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
    "HLO002": ToolCode("HLO002", "read-leniently", "Bytes that are not UTF-8 inside metadata strings were read "
                       "as U+FFFD instead of failing the file.", Severity.NOTE),
    "HLO900": ToolCode("HLO900", "check-crashed", "A check raised an internal error on this module."),
    # `hloscan confirm`: the TPU compiler rejected the module with an error no rule predicts.
    "HLO910": ToolCode("HLO910", "tpu-compiler-error", "The TPU compiler (libtpu, compile-only) rejected the "
                       "module with an error no hloscan rule predicts."),
}
