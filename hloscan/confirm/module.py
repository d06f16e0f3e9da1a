"""One module compiled for one TPU topology (in a worker process) and compared with its static findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hloscan.confirm.compare import HbmFigure, KernelFigure, compare, hbm_figure, kernel_figures
from hloscan.confirm.runner import DEFAULT_TIMEOUT, NoTpuPython, WorkerResult, request_for, run_worker, tpu_python
from hloscan.confirm.topology import generation_of
from hloscan.confirm.verdict import Verdict, classify
from hloscan.hlo.ir import Module
from hloscan.lint.finding import Finding

__all__ = ["ModuleConfirmation", "NoTpuPython", "confirm_module", "tpu_python", "DEFAULT_TIMEOUT"]

# Statuses of a compile that gave no verdict: the module is reported, the run exits 2.
NO_VERDICT = ("convert_error", "unsupported", "timeout", "crashed")


@dataclass
class ModuleConfirmation:
    """One module compiled for one topology: the compiler's verdict, the findings compared, the figures."""

    path: str
    module: str
    topology: str
    result: WorkerResult
    verdict: Verdict | None  # None: the compile gave no verdict (result.status says why)
    findings: list[Finding] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)  # per finding: confirmed, contradicted, ... or ""
    kernels: list[KernelFigure] = field(default_factory=list)
    hbm: HbmFigure | None = None

    @property
    def failed(self) -> bool:
        return self.verdict is None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "module": self.module, "topology": self.topology,
                "status": self.result.status, "verdict": self.verdict.label if self.verdict else None,
                "compiler_error": self.result.error, "instruction": self.verdict.instruction if self.verdict else None,
                "versions": self.result.versions, "device_kind": self.result.device_kind,
                "compiled_topology": self.result.topology, "device_count": self.result.device_count,
                "compile_s": self.result.compile_s, "wall_s": round(self.result.wall_s, 2),
                "statuses": [{"code": f.code, "instruction": f.instruction, "status": s}
                             for f, s in zip(self.findings, self.statuses) if s],
                "kernels": [k.to_json() for k in self.kernels],
                "hbm": self.hbm.to_json() if self.hbm else None,
                "memory_analysis": self.result.memory_analysis,
                "mem_report_totals": self.result.mem_report_totals, "unread": self.result.unread}


def confirm_module(module: Module, path: str, static: list[Finding], topology: str, python: str,
                   timeout: float = DEFAULT_TIMEOUT, text: str | None = None,
                   host_outputs: tuple[int, ...] | None = None) -> ModuleConfirmation:
    """Compile `module` for `topology` (`v5e`, `v5e:2x2`, ...) and compare it with its static findings.
    `host_outputs`: output numbers jax placed in pinned_host (a Lowered's out_shardings), besides S(5)."""
    request = request_for(module, topology, text)
    if host_outputs:
        request["host_results"] = sorted(set(request["host_results"]) | set(host_outputs))
    result = run_worker(request, python, timeout)
    out = ModuleConfirmation(path, module.name, topology, result, None, list(static), [""] * len(static))
    if result.status in NO_VERDICT:
        return out
    out.verdict = classify(result.error if result.status == "compile_error" else None)
    out.findings, out.statuses = compare(module, path, static, out.verdict, result.libtpu or "?")
    generation = generation_of(topology)
    out.kernels = kernel_figures(module, generation, result.kernels)
    out.hbm = hbm_figure(module, path, generation, result.memory_analysis, result.mem_report_totals)
    return out
