"""XLA's own memory figures: memory-usage-report.txt and buffer-assignment.txt written beside a dump.

The memory-usage report's default-memory-space (color 0) "Total bytes" is the figure XLA's HBM OOM message
calls "total memory required for HLO temporaries": the sum of every color-0 allocation of the buffer
assignment (entry parameters, live-out outputs, the preallocated temp heap, constants, thread-local bits).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from hloscan.hlo.loader import read_text

_SPACE_TOTAL = re.compile(r"^Memory Space: (.+?)\s*\nTotal bytes: (\d+)", re.MULTILINE)
DEFAULT_SPACE = "default (color=0)"
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_VALUE = re.compile(r"^ value: <\d+ (\S+?)(?:\{[\d,]*\})? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_STAGE_SUFFIXES = ("before_optimizations.txt", "after_optimizations.txt")


@dataclass
class Allocation:
    index: int
    size: int
    color: int
    kind: str  # "parameter", "temp", "constant", "thread-local", "output", "other"
    parameter: int | None
    live_out: bool
    values: list[tuple[str, int, int, str]] = field(default_factory=list)  # (instruction, size, offset, shape)


@dataclass
class XlaReport:
    """What XLA reported for one compile."""

    default_total: int | None
    allocations: list[Allocation]
    path: str

    def color0(self) -> list[Allocation]:
        return [a for a in self.allocations if a.color == 0]

    @property
    def arguments_bytes(self) -> int:
        return sum(a.size for a in self.color0() if a.kind == "parameter")

    @property
    def temp_heap_bytes(self) -> int:
        return sum(a.size for a in self.color0() if a.kind == "temp")

    @property
    def total_bytes(self) -> int | None:
        if self.default_total is not None:
            return self.default_total
        return sum(a.size for a in self.color0()) if self.allocations else None

    def largest_temp_values(self, limit: int = 10) -> list[tuple[str, int, int, str]]:
        heap = [v for a in self.color0() if a.kind == "temp" for v in a.values]
        return sorted(heap, key=lambda v: -v[1])[:limit]


def memory_usage_totals(text: str) -> dict[str, int]:
    """"Total bytes" of each memory space of a memory-usage report: {"default (color=0)": ..., "vmem (color=1)":
    ...}, the spaces named as the report names them."""
    return {m.group(1): int(m.group(2)) for m in _SPACE_TOTAL.finditer(text)}


def parse_memory_usage_report(text: str) -> int | None:
    """The default memory space's (HBM's) total."""
    return memory_usage_totals(text).get(DEFAULT_SPACE)


def parse_buffer_assignment(text: str) -> list[Allocation]:
    out: list[Allocation] = []
    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            out.append(_allocation(int(m.group(1)), int(m.group(2)), m.group(3)))
            continue
        v = _VALUE.match(line)
        if v and out:
            out[-1].values.append((v.group(1), int(v.group(2)), int(v.group(3)), v.group(4)))
        elif line and not line.startswith((" ", "allocation")) and out and not line.startswith("BufferAssignment"):
            break  # the statistics / live-range sections that follow the allocations
    return out


def _allocation(index: int, size: int, tail: str) -> Allocation:
    color = re.search(r"color (\d+)", tail)
    param = re.search(r"parameter (\d+)", tail)
    if param:
        kind = "parameter"
    elif "preallocated-temp" in tail:
        kind = "temp"
    elif "constant" in tail:
        kind = "constant"
    elif "thread-local" in tail:
        kind = "thread-local"
    elif "maybe-live-out" in tail:
        kind = "output"
    else:
        kind = "other"
    return Allocation(index, size, int(color.group(1)) if color else 0, kind,
                      int(param.group(1)) if param else None, "maybe-live-out" in tail)


_REPORT_NAMES = ("memory-usage-report.txt", "buffer-assignment.txt")


def sibling(path: str, name: str) -> str | None:
    """The report `name` written for the same compile as the dump at `path` (same file prefix)."""
    return next((full for full in _candidates(path, name) if os.path.exists(full)), None)


def _candidates(path: str, name: str) -> list[str]:
    """Where report `name` of the dump at `path` may be, in the order they are tried."""
    folder, base = os.path.split(path)
    base = base[:-3] if base.endswith(".xz") else base
    out = []
    for suffix in _STAGE_SUFFIXES:
        if base.endswith(suffix):
            prefix = base[: -len(suffix)]
            # XLA writes `<prefix>after_optimizations-<name>`; tpu-oracle case folders hold bare `<name>`.
            names = (prefix + "after_optimizations-" + name, prefix + name)
            out.extend(os.path.join(folder, n + ext) for n in names for ext in ("", ".xz"))
    return out


def report_files(dump_path: str) -> list[str]:
    """Every path read_report may read for the dump at `dump_path`, present or not (Family.side_files)."""
    return [full for name in _REPORT_NAMES for full in _candidates(dump_path, name)]


def read_report(dump_path: str) -> XlaReport | None:
    """XLA's figures beside a dump file, or None when it has neither report."""
    usage, assignment = (sibling(dump_path, name) for name in _REPORT_NAMES)
    if usage is None and assignment is None:
        return None
    total = parse_memory_usage_report(read_text(usage)) if usage else None
    allocations = parse_buffer_assignment(read_text(assignment)) if assignment else []
    return XlaReport(total, allocations, usage or assignment or dump_path)
