"""Entry parameter and output bytes per memory space, the largest buffers, and tile-padding waste."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscan.hlo.ir import Module
from hloscan.hlo.layout import UnsizedShapeError, memory_space_name, padding
from hloscan.hlo.signature import Signature, SignatureEntry, module_signature


@dataclass(frozen=True)
class SpaceTotals:
    """Bytes in one memory space. Outputs that alias a parameter reuse its buffer, so they are split out."""

    memory_space: int
    parameter_bytes: int = 0
    parameter_count: int = 0
    output_bytes: int = 0  # outputs with their own buffers
    output_count: int = 0
    aliased_output_bytes: int = 0
    # One device's share of parameter_bytes / output_bytes (the same unless the module is still to be split).
    device_parameter_bytes: int = 0
    device_output_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return self.parameter_bytes + self.output_bytes

    @property
    def device_total_bytes(self) -> int:
        return self.device_parameter_bytes + self.device_output_bytes

    def to_json(self) -> dict[str, Any]:
        return {"memory_space": self.memory_space, "name": memory_space_name(self.memory_space),
                "parameter_bytes": self.parameter_bytes, "parameter_count": self.parameter_count,
                "output_bytes": self.output_bytes, "output_count": self.output_count,
                "aliased_output_bytes": self.aliased_output_bytes, "total_bytes": self.total_bytes,
                "device_parameter_bytes": self.device_parameter_bytes, "device_output_bytes": self.device_output_bytes,
                "device_total_bytes": self.device_total_bytes}


@dataclass(frozen=True)
class BufferRow:
    """One entry buffer with its size, padding waste and the padded dimensions."""

    entry: SignatureEntry

    @property
    def waste_bytes(self) -> int:
        return self.entry.bytes - self.entry.unpadded_bytes

    @property
    def waste_fraction(self) -> float:
        return self.waste_bytes / self.entry.bytes if self.entry.bytes else 0.0

    def padding_rows(self) -> list:
        """Padding per dimension; none for non-arrays and for shapes with unbounded (`?`) dims."""
        if not self.entry.shape.is_array:
            return []
        try:
            return padding(self.entry.shape)
        except UnsizedShapeError:
            return []

    def padding_text(self) -> str:
        return "; ".join(p.describe() for p in self.padding_rows())

    def to_json(self) -> dict[str, Any]:
        e = self.entry
        return {"kind": e.kind, "index": e.index, "shape_index": list(e.shape_index), "name": e.name,
                "op_name": e.op_name, "shape": e.shape_text, "memory_space": e.memory_space,
                "bytes": e.bytes, "unpadded_bytes": e.unpadded_bytes, "waste_bytes": self.waste_bytes,
                "waste_fraction": round(self.waste_fraction, 4), "device_bytes": e.device_bytes,
                "padding": [p.to_json() for p in self.padding_rows()]}


@dataclass(frozen=True)
class MemoryReport:
    module: str
    spaces: tuple[SpaceTotals, ...]
    largest: tuple[BufferRow, ...]
    waste: tuple[BufferRow, ...]  # worst first, at or above the thresholds
    total_waste_bytes: int  # over all entry buffers, not only the listed ones
    waste_threshold: float
    min_waste_bytes: int
    devices: int = 1  # > 1: a module not yet partitioned, whose buffers are split over this many devices

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "devices": self.devices, "memory_spaces": [s.to_json() for s in self.spaces],
                "largest": [r.to_json() for r in self.largest], "waste": [r.to_json() for r in self.waste],
                "total_waste_bytes": self.total_waste_bytes, "waste_threshold": self.waste_threshold,
                "min_waste_bytes": self.min_waste_bytes}


def _space_totals(sig: Signature) -> tuple[SpaceTotals, ...]:
    acc: dict[int, dict[str, int]] = {}
    for e in sig.parameters:
        t = acc.setdefault(e.memory_space, {})
        t["parameter_bytes"] = t.get("parameter_bytes", 0) + e.bytes
        t["device_parameter_bytes"] = t.get("device_parameter_bytes", 0) + e.device_bytes
        t["parameter_count"] = t.get("parameter_count", 0) + 1
    for e in sig.outputs:
        t = acc.setdefault(e.memory_space, {})
        key = "aliased_output_bytes" if e.aliases else "output_bytes"
        t[key] = t.get(key, 0) + e.bytes
        if not e.aliases:
            t["output_count"] = t.get("output_count", 0) + 1
            t["device_output_bytes"] = t.get("device_output_bytes", 0) + e.device_bytes
    return tuple(SpaceTotals(space, **fields) for space, fields in sorted(acc.items()))


def _buffers(sig: Signature) -> list[BufferRow]:
    # An aliased output shares its parameter's buffer: count that memory once, as the parameter.
    return [BufferRow(e) for e in sig.parameters] + [BufferRow(e) for e in sig.outputs if not e.aliases]


def memory_report(source: Module | Signature, top: int = 10, waste_threshold: float = 0.25,
                  min_waste_bytes: int = 1024) -> MemoryReport:
    """Summarise entry buffers: totals per memory space, the `top` largest, and padding waste.

    A buffer is listed as waste when its padding is at least `waste_threshold` of its padded size
    (0.69 for a `[..., 40]` minor dim padded to 128) and at least `min_waste_bytes` (the default hides
    scalars, which always waste ~508 of their 512 bytes).
    """
    sig = source if isinstance(source, Signature) else module_signature(source)
    rows = _buffers(sig)
    largest = sorted(rows, key=lambda r: -r.entry.bytes)[:top] if top else []
    waste = [r for r in rows if r.waste_bytes > 0 and r.waste_fraction >= waste_threshold
             and r.waste_bytes >= min_waste_bytes]
    waste.sort(key=lambda r: (-r.waste_bytes, -r.waste_fraction))
    devices = max((e.devices for e in sig.parameters + sig.outputs), default=1)
    return MemoryReport(sig.module, _space_totals(sig), tuple(largest), tuple(waste),
                        sum(r.waste_bytes for r in rows), waste_threshold, min_waste_bytes, devices)


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def render_memory(report: MemoryReport) -> str:
    lines = [f"module {report.module}: entry buffers by memory space"]
    for s in report.spaces:
        alias = f", +{human_bytes(s.aliased_output_bytes)} aliased outputs" if s.aliased_output_bytes else ""
        lines.append(f"  S({s.memory_space}) {memory_space_name(s.memory_space)}: parameters "
                     f"{human_bytes(s.parameter_bytes)} ({s.parameter_count}), outputs {human_bytes(s.output_bytes)} "
                     f"({s.output_count}){alias}, total {human_bytes(s.total_bytes)}")
        if report.devices > 1:
            lines.append(f"    per device ({report.devices} devices, as the shardings split them): parameters "
                         f"{human_bytes(s.device_parameter_bytes)}, outputs {human_bytes(s.device_output_bytes)}, "
                         f"total {human_bytes(s.device_total_bytes)}")
    if report.largest:
        lines.append("largest buffers:")
        lines += [f"  {r.entry.label}: {r.entry.shape_text} {human_bytes(r.entry.bytes)}"
                  + (f" ({human_bytes(r.entry.device_bytes)} per device)" if r.entry.device_shape is not None else "")
                  for r in report.largest]
    lines.append(f"padding waste >= {report.waste_threshold:.0%}"
                 + (f" and >= {human_bytes(report.min_waste_bytes)}" if report.min_waste_bytes else "")
                 + f" (all entry buffers: {human_bytes(report.total_waste_bytes)}):")
    if not report.waste:
        lines.append("  none")
    lines += [f"  {r.entry.label}: {r.entry.shape_text} wastes {human_bytes(r.waste_bytes)} "
              f"({r.waste_fraction:.0%}): {r.padding_text()}" for r in report.waste]
    return "\n".join(lines)


__all__ = ["BufferRow", "MemoryReport", "SpaceTotals", "human_bytes", "memory_report", "render_memory"]
