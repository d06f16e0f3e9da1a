"""The one-file HTML report: a model of plain data (findings, HBM, VMEM, signatures, pictures) rendered with a
Jinja2 template (extra `report`).

Jinja2 because the report is mostly strings from dumps (instruction names, op_names, shapes, file names,
messages) and a template engine with autoescaping escapes every one of them by default: a value reaches the
page unescaped only through `Markup`, which only svg.clean_svg output gets. String concatenation would
make escaping something each line must remember. The page is self-contained: CSS inline, pictures as inline
SVG, no script, no font, no URL; its Content-Security-Policy (`default-src 'none'`) makes the browser refuse
any request the page might still try.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from hloscan.analyses.hbm.model import HbmResult
from hloscan.hlo.signature import Signature
from hloscan.lint.finding import Finding, Severity
from hloscan.report.extra import require
from hloscan.report.svg import UnsafeSvg, clean_svg
from hloscan.report.timeline import Timeline
from hloscan.report.vmem_bars import KernelBar
from hloscan.version import __version__

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
SIGNATURE_ROWS = 64  # entries per signature table; the rest are counted


@dataclass
class FindingEntry:
    number: int  # as `hloscan check` numbers it ([N])
    finding: Finding
    dump_line: str | None = None  # the instruction's text in the dump
    diagram: str | None = None  # inline SVG (clean_svg output)
    diagram_note: str | None = None  # why there is none, or that it was cut


@dataclass
class ModuleEntry:
    path: str
    module: str
    stage: str | None
    instructions: int
    hbm: HbmResult | None = None
    hbm_note: str | None = None  # no TPU HBM figure: why
    timeline: Timeline | None = None
    hbm_chart: str | None = None
    kernels: list[KernelBar] = field(default_factory=list)
    kernel_hints: dict[str, str] = field(default_factory=dict)  # instruction -> hint text
    vmem_chart: str | None = None
    signature: Signature | None = None

    @property
    def anchor(self) -> str:
        return "m-" + "".join(c if c.isalnum() else "-" for c in f"{self.path}-{self.module}")[-80:]


@dataclass
class Report:
    title: str
    inputs: list[str]
    findings: list[FindingEntry]
    modules: list[ModuleEntry]
    files: int
    files_failed: list[tuple[str, str]] = field(default_factory=list)  # (path, error) of unparsed inputs
    skipped: list[tuple[str, str]] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    generated: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    version: str = __version__
    seconds: float | None = None

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.finding.severity == severity)

    @property
    def verdict(self) -> str:
        """fail (an error finding or an input that could not be read), warn, or pass."""
        if self.files_failed or self.count(Severity.ERROR):
            return "fail"
        return "warn" if self.count(Severity.WARNING) else "pass"

    @property
    def hbm_modules(self) -> list[ModuleEntry]:
        return [m for m in self.modules if m.hbm is not None or m.hbm_note]

    @property
    def kernel_modules(self) -> list[ModuleEntry]:
        return [m for m in self.modules if m.kernels]

    @property
    def worst_hbm(self) -> ModuleEntry | None:
        ranked = [m for m in self.modules if m.hbm is not None and m.hbm.capacity_bytes]
        return max(ranked, key=lambda m: m.hbm.xla_total_bytes / m.hbm.capacity_bytes, default=None)

    @property
    def kernels(self) -> list[KernelBar]:
        return [k for m in self.modules for k in m.kernels]


def human(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "-"
    for size, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def _environment():
    jinja2 = require("jinja2", "jinja2", "hloscan report")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["human"] = human
    env.filters["pct"] = lambda x: f"{x:.0%}" if isinstance(x, (int, float)) else "-"
    env.filters["thousands"] = lambda n: f"{n:,}" if isinstance(n, int) else "-"
    env.globals["Severity"] = Severity
    return env


def template_text() -> str:
    return resources.files("hloscan.report").joinpath("templates", "report.html.j2").read_text(encoding="utf-8")


def render_report(report: Report) -> str:
    """The report as one HTML document. SVG fields hold raw SVG (graphviz, matplotlib): the template inlines
    them only through `inline_svg`, which cleans each (svg.clean_svg) and gives its ids a prefix of their own."""
    env = _environment()
    markupsafe = require("markupsafe", "jinja2", "hloscan report")
    counter = iter(range(1, 1 << 30))

    def inline_svg(svg: str | None, label: str = "") -> Any:
        if not svg:
            return ""
        number = next(counter)
        try:
            cleaned = clean_svg(svg, prefix=f"s{number}")
        except UnsafeSvg as exc:
            return markupsafe.Markup('<p class="note">picture left out: {}</p>').format(str(exc))
        return markupsafe.Markup(cleaned)

    template = env.from_string(template_text())
    return template.render(r=report, csp=CSP, signature_rows=SIGNATURE_ROWS, inline_svg=inline_svg)
