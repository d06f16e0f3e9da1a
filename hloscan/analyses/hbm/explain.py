"""Explain XLA's HBM out-of-memory messages (E1000), optionally against the dump.

Short form:  "Ran out of memory on HBM, the total memory required for HLO temporaries (19.13G) exceeds
              available HBM (15.75G)."
Long form:   "Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z." followed by
              the largest program allocations (Size, Operator/op_name, Shape, Unpadded size, XLA label,
              Allocation type).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hloscan.analyses.xla_errors import size_unit_bytes
from hloscan.hlo.ir import Module
from hloscan.analyses.hbm.analyze import analyze_module
from hloscan.analyses.hbm.capacity import CAPACITY_BYTES, human
from hloscan.analyses.hbm.hints import fix_hints

_NUM = r"([\d.]+)\s*([KMGT]i?B?|B)?"
_SHORT = re.compile(r"Ran out of memory on HBM, the total memory required for HLO temporaries \(" + _NUM +
                    r"\) exceeds available HBM \(" + _NUM + r"\)", re.I)
_LONG = re.compile(r"Ran out of memory in memory space hbm\.\s*Used " + _NUM + r" of " + _NUM +
                   r" hbm\.(?:\s*Exceeded hbm capacity by " + _NUM + r")?", re.I)
_BARE = re.compile(r"Ran out of memory (?:on HBM|in memory space hbm)|\bCompileTimeHbmOom\b", re.I)
_ALLOC_SIZE = re.compile(r"^\s*\d*\.?\s*Size:\s*" + _NUM, re.I | re.M)
_ALLOC_FIELD = re.compile(r"^\s*(Operator|op_name|Shape|Unpadded size|XLA label|Allocation type|Source)\s*:\s*(.*)$",
                          re.I | re.M)


def to_bytes(number: str, unit: str | None) -> int:
    return int(float(number) * size_unit_bytes(unit))


@dataclass
class MessageAllocation:
    size: int
    fields: dict[str, str]

    @property
    def label(self) -> str | None:
        """The HLO instruction name inside the XLA label (`%name = shape op(...)`) or None."""
        text = self.fields.get("xla label", "")
        m = re.search(r"%?([\w.\-]+)\s*=", text)
        return m.group(1) if m else None


@dataclass
class HbmOom:
    form: str  # "short" or "long"
    required: int
    capacity: int
    allocations: list[MessageAllocation] = field(default_factory=list)
    dump: dict[str, Any] | None = None

    @property
    def over(self) -> int:
        return self.required - self.capacity

    @property
    def generations(self) -> list[str]:
        """Generations whose available HBM matches the message's figure (to its rounding)."""
        return [g for g, cap in CAPACITY_BYTES.items() if abs(cap - self.capacity) <= 0.006 * cap]

    def to_json(self) -> dict[str, Any]:
        return {"form": self.form, "required_bytes": self.required, "capacity_bytes": self.capacity,
                "over_bytes": self.over, "over_fraction": self.over / self.capacity if self.capacity else None,
                "generations": self.generations,
                "allocations": [{"size": a.size, **a.fields} for a in self.allocations], "dump": self.dump}


def parse_hbm_oom(text: str) -> HbmOom | None:
    m = _SHORT.search(text)
    if m:
        return HbmOom("short", to_bytes(m.group(1), m.group(2)), to_bytes(m.group(3), m.group(4)))
    m = _LONG.search(text)
    if not m:
        # The message's first words alone (a log line cut short, a ticket title): still E1000, without figures.
        return HbmOom("bare", 0, 0) if _BARE.search(text) else None
    used, cap = to_bytes(m.group(1), m.group(2)), to_bytes(m.group(3), m.group(4))
    return HbmOom("long", used, cap, _allocations(text[m.end():]))


def _allocations(text: str) -> list[MessageAllocation]:
    out = []
    starts = list(_ALLOC_SIZE.finditer(text))
    for i, s in enumerate(starts):
        chunk = text[s.end(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        fields = {k.lower(): v.strip() for k, v in _ALLOC_FIELD.findall(chunk)}
        out.append(MessageAllocation(to_bytes(s.group(1), s.group(2)), fields))
    return out


def explain_hbm_oom(text: str, modules: list[Module] | None = None, dump_path: str | None = None,
                    results: list[Any] | None = None) -> HbmOom | None:
    """The parsed message; with the dump, its allocations mapped to instructions and Python lines.
    `results`: the dump's `hbm` figures (XLA's memory-usage report where one sits beside the dump), so
    explain and `hloscan hbm` give one figure for one folder."""
    e = parse_hbm_oom(text)
    if e is None:
        return None
    if modules:
        e.dump = _against_dump(e, modules, dump_path or "", results)
    return e


def _against_dump(e: HbmOom, modules: list[Module], path: str, results: list[Any] | None = None) -> dict[str, Any]:
    gen = e.generations[0] if e.generations else None
    module = max(modules, key=lambda m: m.instruction_count)
    named = [r for r in results or [] if r.module == module.name]
    r = max(named, key=lambda r: (r.kind == "exact", r.xla_total_bytes)) if named else \
        analyze_module(module, path, gen, use_reports=False)
    names = {i.name: (c, i) for c, i in module.instructions()}
    mapped = []
    for a in e.allocations:
        hit = names.get(a.label or "")
        mapped.append({"size": a.size, "instruction": a.label, "found": hit is not None,
                       "line": hit[1].line if hit else None})
    return {"module": module.name, "stage": r.stage, "kind": r.kind, "hloscan_total_bytes": r.xla_total_bytes,
            "arguments_bytes": r.arguments_bytes, "temporaries_bytes": r.temporaries_bytes,
            "live_at_peak": [b.to_json() for b in r.live_at_peak], "allocations": mapped, "hints": fix_hints(r)}


def render_text(e: HbmOom) -> str:
    if e.form == "bare":
        lines = ["E1000 HBM out of memory: the program needs more HBM than the TPU has (the message quoted no "
                 "figures; XLA's full message says how much was required and available).",
                 "  hloscan hbm DUMP (or hloscan explain 'MESSAGE' --dump DUMP) gives the figure, the buffers live "
                 "at the peak and their Python lines."]
        if e.dump:
            d = e.dump
            lines.append(f"  in the dump (module {d['module']}, {d['stage']}, {d['kind']}): hloscan counts "
                         f"{human(d['hloscan_total_bytes'])}")
            lines.extend(f"  fix: {h}" for h in d["hints"])
        return "\n".join(lines)
    gens = ", ".join(e.generations) or "an unknown TPU generation"
    share = e.over / e.capacity if e.capacity else 0.0
    lines = [f"E1000 HBM out of memory ({e.form} form): the program needs {human(e.required)} of HBM but "
             f"{human(e.capacity)} is available ({gens}).",
             f"  over capacity by {human(e.over)} ({share:.1%}): free at least that much, e.g. "
             f"{e.over / (1 << 30):.2f} GiB = {e.over / 1e9:.2f} GB.",
             "  The figure counts arguments, outputs that are not aliased to arguments, the peak of temporaries "
             "and constants (the memory-usage report's default-space total)."]
    for a in e.allocations[:10]:
        lines.append(f"  allocation {human(a.size)}: " + ", ".join(f"{k}={v}" for k, v in a.fields.items()))
    if e.dump:
        d = e.dump
        lines.append(f"  in the dump (module {d['module']}, {d['stage']}, {d['kind']}): hloscan counts "
                     f"{human(d['hloscan_total_bytes'])} (arguments {human(d['arguments_bytes'])}, "
                     f"temporaries {human(d['temporaries_bytes'])})")
        for a in d["allocations"]:
            where = f"line {a['line']}" if a["found"] else "not in this dump"
            lines.append(f"    message allocation {human(a['size'])} -> %{a['instruction']} ({where})")
        lines.append("    largest buffers live at the peak:")
        for b in d["live_at_peak"]:
            lines.append(f"      {human(b['bytes']):>9}  %{b['instruction']}  {b['shape']}"
                         + (f"  {b['op_name']}" if b["op_name"] else "") + (f"  {b['source']}" if b["source"] else ""))
        lines.extend(f"  fix: {h}" for h in d["hints"])
    return "\n".join(lines)
