"""Static findings against the TPU compiler's verdict: each one confirmed or contradicted, each compiler error
the checks missed turned into the finding the matching rule would have given, and the compiler's exact
figures beside hloscan's estimates."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hloscan.analyses.hbm.analyze import analyze_module
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.confirm.readback import CompiledKernel, mosaic_body
from hloscan.analyses.xla_errors import XLA_ERRORS
from hloscan.confirm.verdict import HOST_OFFLOAD, RULE_KIND, RULES, Verdict
from hloscan.hlo.attrs import parse_metadata
from hloscan.hlo.ir import Instruction, Module
from hloscan.hlo.source import source_location
from hloscan.lint.finding import Finding, Severity, SourceLocation, Span
from hloscan.lint.registry import TOOL_CODES, lookup

CONFIRMED, CONTRADICTED, NOT_REACHED, MISSED = "confirmed", "contradicted", "not-reached", "missed"
CONFIRMATION_KEY = "tpu_compiler"  # Finding.data key holding what the compiler said of the finding


@dataclass(frozen=True)
class KernelFigure:
    """One tpu_custom_call: hloscan's scoped-VMEM estimate and the compiler's used_scoped_memory_configs."""

    instruction: str
    line: int
    static_bytes: int
    static_kind: str  # the estimate's own label: exact, estimate, measured, ...
    compiler_bytes: int | None  # None: the compile stopped before codegen (or another error)
    exact_bytes: int | None = None  # `--exact`: the kernel compiled alone in a minimal module
    names: tuple[str, ...] = ()  # the kernel's instruction name(s) after optimisation

    @property
    def error(self) -> float | None:
        """(static - compiler) / compiler."""
        if not self.compiler_bytes:
            return None
        return (self.static_bytes - self.compiler_bytes) / self.compiler_bytes

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "line": self.line, "static_bytes": self.static_bytes,
                "static_kind": self.static_kind, "compiler_bytes": self.compiler_bytes,
                "static_error": None if self.error is None else round(self.error, 4),
                "exact_bytes": self.exact_bytes, "compiled_names": list(self.names)}


@dataclass(frozen=True)
class HbmFigure:
    """The module's HBM: hloscan's total against memory_analysis and the memory-usage report."""

    static_bytes: int
    static_kind: str
    memory_analysis_peak: int | None  # argument + output - alias + temp
    report_total: int | None  # memory-usage-report "Total bytes" of default (color=0)

    @property
    def error(self) -> float | None:
        exact = self.report_total or self.memory_analysis_peak
        return None if not exact else (self.static_bytes - exact) / exact

    def to_json(self) -> dict[str, Any]:
        return {"static_bytes": self.static_bytes, "static_kind": self.static_kind,
                "memory_analysis_peak": self.memory_analysis_peak, "report_total": self.report_total,
                "static_error": None if self.error is None else round(self.error, 4)}


def predicted_kind(finding: Finding) -> str | None:
    """The compiler failure a static finding predicts (None: the rule predicts no failure, e.g. a warning)."""
    return RULE_KIND.get(finding.code) if finding.code != "HLO910" else None


def status_of(finding: Finding, verdict: Verdict, module: Module | None = None) -> str | None:
    """confirmed: the compiler failed as predicted (on the same instruction, when both name one);
    contradicted: it compiled, or failed otherwise on a kernel-level prediction it reached;
    not-reached: it stopped at another error first (XLA reports one error per compile)."""
    kind = predicted_kind(finding)
    if kind is None:
        return None
    if verdict.ok:
        return CONTRADICTED
    if verdict.kind != kind:
        return NOT_REACHED
    # E1200's message names where the tensor was moved to host, the finding the output it reaches: only
    # per-kernel messages (E1001) name the instruction the finding is about.
    if verdict.instruction and finding.instruction and kind != HOST_OFFLOAD:
        return CONFIRMED if same_kernel(module, finding.instruction, verdict) else NOT_REACHED
    return CONFIRMED


def same_kernel(module: Module | None, name: str, verdict: Verdict) -> bool:
    """Is the finding's instruction the one the compiler names? Optimisation renames kernels (an inlined
    call's kernel takes the callee's name), so their op_names are compared: the compiler's is the full
    path, the unoptimised module's may be the tail within its computation."""
    if name == verdict.instruction:
        return True
    found = _instruction(module, name) if module is not None else None
    mine = parse_metadata(found[1].attr("metadata")).get("op_name") if found else None
    if not isinstance(mine, str) or not verdict.op_name:
        return False
    return verdict.op_name == mine or verdict.op_name.endswith("/" + mine)


def annotate(finding: Finding, status: str, verdict: Verdict, libtpu: str) -> Finding:
    """The static finding, its message saying what the compiler made of it."""
    said = {CONFIRMED: "confirmed by the TPU compiler", CONTRADICTED: "contradicted: the TPU compiler accepted it",
            NOT_REACHED: f"not reached: the TPU compiler stopped at {verdict.label} first"}[status]
    data = {**finding.data, CONFIRMATION_KEY: _said(status, verdict, libtpu)}
    return dataclasses.replace(finding, message=f"{finding.message} [{said}, libtpu {libtpu}]", data=data)


def _said(status: str, verdict: Verdict, libtpu: str) -> dict[str, Any]:
    return {"status": status, "verdict": verdict.label, "libtpu": libtpu,
            "compiler_error": verdict.error, "instruction": verdict.instruction}


def missed_finding(module: Module, path: str, verdict: Verdict, libtpu: str) -> Finding:
    """The finding the matching rule gives, built from the compiler's error: its instruction, Python source
    line and fix hint, marked as found by the compiler and missed by the static checks."""
    rule, code = RULES[verdict.kind]
    check = lookup(rule)
    name = check.name if check is not None else TOOL_CODES[rule].name
    inst = _instruction(module, verdict.instruction) or _by_op_name(module, verdict)
    first = (verdict.error or "").strip().splitlines()[0] if verdict.error else verdict.kind
    loc = source_location(module, inst[1]) if inst else None
    return Finding(
        code=rule, name=name, severity=Severity.ERROR,
        message=f"{first} [found by the TPU compiler, libtpu {libtpu}; missed by the static checks]",
        span=Span(path, inst[1].line if inst else module.line, inst[1].col if inst else 1),
        module=module.name, computation=inst[0] if inst else None, instruction=inst[1].name if inst else None,
        hint=XLA_ERRORS[code].fix if code in XLA_ERRORS else _fallback_hint(verdict.kind), xla_error=code,
        source=None if loc is None else SourceLocation(loc.file, loc.line, loc.function),
        data={CONFIRMATION_KEY: _said(MISSED, verdict, libtpu)})


def _fallback_hint(kind: str) -> str | None:
    if kind == "vmem_capacity_oom":
        return ("The kernel's blocks do not fit in the chip's whole VMEM: use smaller blocks or fewer buffers "
                "(pl.Buffered(1)) for inputs that do not change across the grid.")
    return None


def _by_op_name(module: Module, verdict: Verdict) -> tuple[str, Instruction] | None:
    """The instruction the compiler named, found by op_name when optimisation renamed it: the one custom
    call whose op_name the compiler's ends with (None when none or several do)."""
    if not verdict.op_name:
        return None
    found = []
    for comp, inst in module.with_opcode("custom-call"):
        mine = parse_metadata(inst.attr("metadata")).get("op_name")
        if isinstance(mine, str) and (verdict.op_name == mine or verdict.op_name.endswith("/" + mine)):
            found.append((comp.name, inst))
    return found[0] if len(found) == 1 else None


def _instruction(module: Module, name: str | None) -> tuple[str, Instruction] | None:
    if not name:
        return None
    for comp, inst in module.instructions():
        if inst.name == name:
            return comp.name, inst
    return None


def compare(module: Module, path: str, static: list[Finding], verdict: Verdict,
            libtpu: str) -> tuple[list[Finding], list[str]]:
    """(findings to report: the static ones annotated plus the missed ones, one status per finding)."""
    out, statuses = [], []
    covered = False
    for finding in static:
        status = status_of(finding, verdict, module)
        if status is None:
            out.append(finding)
            statuses.append("")
            continue
        covered |= status == CONFIRMED
        out.append(annotate(finding, status, verdict, libtpu))
        statuses.append(status)
    if not verdict.ok and not covered:
        out.append(missed_finding(module, path, verdict, libtpu))
        statuses.append(MISSED)
    return out, statuses


def kernel_figures(module: Module, tpu: str, compiled: list[CompiledKernel]) -> list[KernelFigure]:
    """Each kernel's estimate beside the compiler's figure for the same kernel. Optimisation renames
    kernels (inlined calls take the callee's name), so they are matched by their Mosaic body; a kernel
    inlined at several call sites gets the largest of its copies' figures."""
    by_body: dict[str | None, list[CompiledKernel]] = {}
    for k in compiled:
        by_body.setdefault(k.body, []).append(k)
    figures = []
    for kernel in estimate_module(module, tpu, None):
        body = mosaic_body(kernel.inst)
        copies = by_body.get(body, []) if body else []
        exact = max((k.scoped_bytes for k in copies), default=None)
        figures.append(KernelFigure(kernel.inst.name, kernel.inst.line, kernel.estimate.estimate_bytes,
                                    kernel.estimate.kind, exact, names=tuple(k.name for k in copies)))
    return figures


def hbm_figure(module: Module, path: str, tpu: str, memory_analysis: dict[str, int],
               report_totals: dict[str, int]) -> HbmFigure:
    static = analyze_module(module, path, tpu, use_reports=False)
    peak = None
    if memory_analysis:
        peak = (memory_analysis.get("argument_size_in_bytes", 0) + memory_analysis.get("output_size_in_bytes", 0)
                - memory_analysis.get("alias_size_in_bytes", 0) + memory_analysis.get("temp_size_in_bytes", 0))
    total = next((v for k, v in report_totals.items() if k.startswith("default")), None)
    return HbmFigure(static.xla_total_bytes, static.kind, peak, total)
