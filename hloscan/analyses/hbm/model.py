"""The result of the HBM analysis for one module, as text and JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Expected error of each kind of figure against XLA's memory-usage-report total (measured on the
# tpu-oracle corpus; see the hbm command's docs).
EXPECTED_ERROR = {"exact": 0.0, "simulated": 0.10, "predicted": 0.25}


@dataclass(frozen=True)
class LiveBuffer:
    instruction: str
    shape: str
    bytes: int
    op_name: str | None
    source: str | None
    line: int = 0
    computation: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "shape": self.shape, "bytes": self.bytes,
                "op_name": self.op_name, "source": self.source}


@dataclass
class HbmResult:
    path: str
    module: str
    stage: str  # "after_optimizations", "before_optimizations" or "unknown"
    kind: str  # "exact", "simulated", "predicted"
    generation: str
    generation_assumed: bool
    capacity_bytes: int
    arguments_bytes: int
    outputs_bytes: int
    aliased_bytes: int
    temporaries_bytes: int
    peak_bytes: int
    xla_total_bytes: int
    verdict: str
    live_at_peak: list[LiveBuffer] = field(default_factory=list)
    peak_instruction: str | None = None
    peak_line: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def expected_error(self) -> float:
        return EXPECTED_ERROR[self.kind]

    @property
    def over_bytes(self) -> int:
        return self.xla_total_bytes - self.capacity_bytes

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "module": self.module, "stage": self.stage, "kind": self.kind,
                "generation": self.generation, "generation_assumed": self.generation_assumed,
                "capacity_bytes": self.capacity_bytes, "arguments_bytes": self.arguments_bytes,
                "outputs_bytes": self.outputs_bytes, "aliased_bytes": self.aliased_bytes,
                "temporaries_bytes": self.temporaries_bytes, "peak_bytes": self.peak_bytes,
                "xla_total_bytes": self.xla_total_bytes, "expected_error": self.expected_error,
                "verdict": self.verdict, "peak_instruction": self.peak_instruction,
                "live_at_peak": [b.to_json() for b in self.live_at_peak], "notes": list(self.notes)}
