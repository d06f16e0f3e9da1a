"""Per Pallas kernel, the parts of its scoped-VMEM figure against its limit and physical VMEM (pure data).

The parts are those `hloscan vmem` adds up (analyses/vmem/estimate.py): the windows (blocks times their
buffers), the scratch operands, the kernel body's own allocations and the allowance for compiler-internal
scratch; their sum is the figure (`estimate_bytes`). With a measured figure (an after_codegen dump) the bar is
that figure alone and the model's prediction is a mark. The range is where the compiler's figure is expected
given the allowances' measured spreads (None at the top: a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscan.analyses.vmem.kernels import Kernel

PARTS = ("windows", "scratch", "body", "internal", "measured")
PART_LABELS = {"windows": "windows (blocks x buffers)", "scratch": "scratch operands",
               "body": "kernel body's allocations", "internal": "internal scratch allowance",
               "measured": "measured (used_scoped_memory_configs)"}


@dataclass(frozen=True)
class KernelBar:
    path: str
    instruction: str
    line: int
    kernel: str | None
    tpu: str
    tpu_assumed: bool
    verdict: str  # "fits" | "tight" | "E1001" | "vmem-oom"
    kind: str  # "measured" | "estimate" | "whole-array"
    figure_kind: str
    parts: tuple[tuple[str, int], ...]  # (part, bytes), bottom to top; they add up to estimate_bytes
    estimate_bytes: int
    range_bytes: tuple[int, int | None] | None
    predicted_bytes: int | None
    limit_bytes: int
    limit_source: str
    physical_bytes: int

    @property
    def exceeds(self) -> bool:
        return self.verdict in ("E1001", "vmem-oom")

    @property
    def label(self) -> str:
        name = f" ({self.kernel})" if self.kernel and self.kernel != self.instruction else ""
        return f"%{self.instruction}{name}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "instruction": self.instruction, "line": self.line, "kernel": self.kernel,
                "tpu": self.tpu, "tpu_assumed": self.tpu_assumed, "verdict": self.verdict, "kind": self.kind,
                "figure_kind": self.figure_kind, "parts": {k: v for k, v in self.parts},
                "estimate_bytes": self.estimate_bytes,
                "range_bytes": None if self.range_bytes is None else list(self.range_bytes),
                "predicted_bytes": self.predicted_bytes, "limit_bytes": self.limit_bytes,
                "limit_source": self.limit_source, "physical_bytes": self.physical_bytes}


def kernel_bar(path: str, kernel: Kernel) -> KernelBar:
    est = kernel.estimate
    if est.kind == "measured":
        parts: tuple[tuple[str, int], ...] = (("measured", est.estimate_bytes),)
    else:
        parts = (("windows", est.window_bytes), ("scratch", est.scratch_bytes), ("body", est.body_bytes),
                 ("internal", est.internal_bytes))
    return KernelBar(path, kernel.inst.name, kernel.inst.line, est.kernel_name, est.tpu, kernel.tpu_assumed,
                     est.verdict, est.kind, est.figure_kind, parts, est.estimate_bytes, est.range_bytes,
                     est.predicted_bytes if est.kind == "measured" else None, est.limit_bytes, est.limit_source,
                     est.physical_bytes)


def kernel_bars(rows: list[tuple[str, Kernel]]) -> list[KernelBar]:
    """One bar per kernel, in dump order."""
    return [kernel_bar(path, k) for path, k in rows]
