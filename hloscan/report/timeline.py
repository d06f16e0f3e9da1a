"""HBM in use along the schedule, by kind, with the peak, the buffers live there and where they come from.

Pure data (no plotting): `hloscan hbm --timeline` writes it as CSV/JSON, charts.py draws it. It replays the
simulation `hloscan hbm` ran for the module (analyses/hbm/analyze.py, same mode and generation) and splits the
figure it printed into bands:

    arguments + aliased + outputs + constants   flat: XLA's total counts them for the whole program
    temporaries(position)                        the live temporaries after each instruction (liveness.py)

The curve's maximum is the simulation's sweep; `peak_bytes` is `hloscan hbm`'s figure (HbmResult.peak_bytes).
They differ by `adjustment_bytes`, named by `adjustment_reason`: the holes in a scheduled module's heap
(XLA packs temporaries at fixed offsets), XLA's own memory-usage report when it was read (exact figure), or
the middle of two placements of host-argument copies (a prediction). The chart draws the difference, so the
peak it marks is always the figure `hloscan hbm` prints.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any, Iterable

from hloscan.analyses.hbm.liveness import BufferLife, Simulation, live_temporaries, simulate, vmem_for_temporaries
from hloscan.analyses.hbm.analyze import live_buffer
from hloscan.analyses.hbm.model import HbmResult
from hloscan.hlo.ir import Computation, Instruction, Module

# The flat bands, bottom to top, then the temporaries; the chart stacks them in this order.
KINDS = ("arguments", "aliased", "outputs", "constants", "temporaries")
KIND_LABELS = {"arguments": "arguments", "aliased": "arguments aliased with outputs (donated)",
               "outputs": "outputs (not aliased)", "constants": "constants", "temporaries": "temporaries",
               "body": "temporaries defined in the loop body", "outside": "loop state and values from outside"}
LABELLED = 6  # buffers live at the peak that the chart names
DEFAULT_GROUP_DEPTH = 3  # op_name components kept when grouping (after dropping the primitive's own name)
NO_OP_NAME = "(no op_name)"
NO_SOURCE = "(no Python source line)"


@dataclass(frozen=True)
class Buffer:
    """A buffer live at the peak: its size, live range (positions) and where it comes from."""

    instruction: str
    computation: str
    opcode: str
    shape: str
    bytes: int
    start: int
    end: int
    line: int
    op_name: str | None
    source: str | None

    def to_json(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "computation": self.computation, "opcode": self.opcode,
                "shape": self.shape, "bytes": self.bytes, "start": self.start, "end": self.end,
                "line": self.line, "op_name": self.op_name, "source": self.source}


@dataclass(frozen=True)
class Share:
    """One row of a breakdown of the peak: a group and its bytes (negative for what the figure takes off)."""

    key: str
    bytes: int
    buffers: int
    kind: str  # "temporaries" (a group of live buffers) or a flat band / adjustment

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "bytes": self.bytes, "buffers": self.buffers, "kind": self.kind}


@dataclass
class Timeline:
    """The module's HBM along its schedule; positions 0..N (0: before the first instruction)."""

    path: str
    module: str
    stage: str
    kind: str  # "exact" | "simulated" | "predicted", as HbmResult.kind
    generation: str
    generation_assumed: bool
    capacity_bytes: int
    verdict: str
    peak_bytes: int  # the figure `hloscan hbm` prints (HbmResult.peak_bytes)
    peak_position: int
    peak_instruction: str | None
    peak_computation: str | None
    peak_line: int
    curve_peak_bytes: int  # the stacked curve at peak_position
    adjustment_bytes: int  # peak_bytes - curve_peak_bytes
    adjustment_reason: str | None
    flat: dict[str, int]  # arguments, aliased, outputs, constants: bytes for the whole program
    temporaries: list[int]  # per position
    instructions: list[tuple[str, str, int]]  # per position: (computation, instruction, dump line); 0 is ("", "", 0)
    labelled: list[Buffer] = field(default_factory=list)
    by_op_name: list[Share] = field(default_factory=list)
    by_source: list[Share] = field(default_factory=list)
    group_depth: int = DEFAULT_GROUP_DEPTH
    window: tuple[int, int] | None = None  # a loop body's positions (first, last), when asked for one
    loop: str | None = None  # the while instruction of the window
    body_temporaries: list[int] | None = None  # per position of the window: defined inside the body
    vmem_absorbed_bytes: int = 0  # prediction only: small temporaries taken as kept in VMEM at the peak
    notes: list[str] = field(default_factory=list)

    @property
    def positions(self) -> int:
        return len(self.temporaries)

    @property
    def flat_bytes(self) -> int:
        return sum(self.flat.values())

    def total(self, position: int) -> int:
        return self.flat_bytes + self.temporaries[position]

    def to_json(self, series: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": 1, "path": self.path, "module": self.module, "stage": self.stage, "kind": self.kind,
            "generation": self.generation, "generation_assumed": self.generation_assumed,
            "capacity_bytes": self.capacity_bytes, "verdict": self.verdict, "peak_bytes": self.peak_bytes,
            "peak_position": self.peak_position, "peak_instruction": self.peak_instruction,
            "peak_computation": self.peak_computation, "peak_line": self.peak_line,
            "curve_peak_bytes": self.curve_peak_bytes, "adjustment_bytes": self.adjustment_bytes,
            "adjustment_reason": self.adjustment_reason, "vmem_absorbed_bytes": self.vmem_absorbed_bytes,
            "flat": dict(self.flat), "positions": self.positions,
            "loop": self.loop, "window": None if self.window is None else list(self.window),
            "live_at_peak": [b.to_json() for b in self.labelled],
            "by_op_name": [s.to_json() for s in self.by_op_name], "group_depth": self.group_depth,
            "by_source": [s.to_json() for s in self.by_source], "notes": list(self.notes),
        }
        if series:
            # Columns, not rows: a 350k-instruction module stays a few MB.
            out["series"] = {"temporaries": list(self.temporaries),
                             "computation": [c for c, _, _ in self.instructions],
                             "instruction": [i for _, i, _ in self.instructions],
                             "line": [ln for _, _, ln in self.instructions]}
            if self.body_temporaries is not None:
                out["series"]["body_temporaries"] = list(self.body_temporaries)
        return out

    def to_csv(self) -> str:
        """One row per position: where it is in the dump, each band and the total."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["position", "computation", "instruction", "line", *KINDS, "total"])
        for p in range(self.positions):
            comp, inst, line = self.instructions[p]
            writer.writerow([p, comp, inst, line or "", *(self.flat[k] for k in KINDS[:-1]), self.temporaries[p],
                             self.total(p)])
        return buf.getvalue()


# ------------------------------------------------------------------------------------------ building


def replay(module: Module, result: HbmResult) -> Simulation:
    """The simulation analyze_module based `result` on: the same mode and generation, and for a prediction
    with device copies of host arguments the placement at the program's start it keeps."""
    scheduled = module.attr("is_scheduled") == "true"
    sim = simulate(module, predict=not scheduled, generation=result.generation)
    if not scheduled and sim.host_copies:
        sim = simulate(module, predict=True, generation=result.generation, hoist_host_copies=True)
    return sim


def hbm_timeline(module: Module, result: HbmResult, *, loop: str | None = None,
                 group_depth: int = DEFAULT_GROUP_DEPTH, sim: Simulation | None = None) -> Timeline:
    """The timeline of `module`, whose `hloscan hbm` figures are `result`. `loop`: a while instruction's name;
    the timeline is then cut to its body's positions and its temporaries split into the body's own and the rest.
    Raises KeyError for a `loop` that is no while instruction of the schedule."""
    sim = sim if sim is not None else replay(module, result)
    predict = module.attr("is_scheduled") != "true"
    count = len(sim.positions) + 1
    temps = [b for b in sim.buffers if b.role == "temp" and b.bytes]
    budget = vmem_for_temporaries(result.generation) if predict else 0
    curve = temporaries_curve(temps, count, budget)
    constants = sum(b.bytes for b in sim.buffers if b.role == "constant")
    own_outputs = sum(b.bytes for b in sim.buffers if b.role == "output")
    aliased = max(0, min(result.aliased_bytes, result.arguments_bytes))
    flat = {"arguments": result.arguments_bytes - aliased, "aliased": aliased,
            "outputs": min(own_outputs, max(result.outputs_bytes - result.aliased_bytes, 0)) if result.devices <= 1
            else own_outputs, "constants": constants}
    instructions = [("", "", 0)] + [(c.name, i.name, i.line) for c, i in sim.positions]
    window = _loop_window(module, sim, loop) if loop else None
    lo, hi = window if window else (0, count - 1)
    peak_position = max(range(lo, hi + 1), key=lambda p: (curve[p], -p))
    flat_bytes = sum(flat.values())
    curve_peak = flat_bytes + curve[peak_position]
    comp, inst, line = instructions[peak_position]
    tl = Timeline(result.path, result.module, result.stage, result.kind, result.generation,
                  result.generation_assumed, result.capacity_bytes, result.verdict, result.peak_bytes,
                  peak_position, inst or None, comp or None, line, curve_peak, 0, None, flat, curve, instructions,
                  group_depth=group_depth, window=window, loop=loop)
    if window is None:
        tl.adjustment_bytes = result.peak_bytes - curve_peak
        tl.adjustment_reason = _adjustment_reason(result, sim, tl.adjustment_bytes)
    else:
        # A loop's own peak is not the module's figure: the window's curve is the figure there.
        tl.peak_bytes = curve_peak
        tl.body_temporaries = _body_curve(temps, window)
        tl.notes.append(f"the body of %{loop} at positions {window[0]}-{window[1]} (simulated once, inline, as "
                        "XLA's heap simulation places it); the module's peak is elsewhere unless it falls here")
    live = sorted((b for b in temps if b.start <= peak_position <= b.end), key=lambda b: -b.bytes)
    buffers = [_buffer(module, b) for b in live]
    tl.labelled = buffers[:LABELLED * 2]
    tl.vmem_absorbed_bytes = sum(b.bytes for b in live) - curve[peak_position]
    tl.by_op_name = breakdown(tl, buffers, lambda b: op_name_group(b.op_name, b.opcode, group_depth))
    tl.by_source = breakdown(tl, buffers, lambda b: b.source or NO_SOURCE)
    return tl


def temporaries_curve(temps: Iterable[BufferLife], count: int, vmem_budget: int = 0) -> list[int]:
    """Bytes of live temporaries after each position 0..count-1, from the sweep that finds the simulation's
    peak (liveness.live_temporaries): with a VMEM budget (a prediction), the smallest live buffers that fit in
    it are taken as kept in VMEM and do not count."""
    curve = [0] * count
    value = previous = 0
    for pos, hbm in live_temporaries(temps, vmem_budget):
        if pos >= count:
            break
        curve[previous:pos] = [value] * (pos - previous)
        value, previous = hbm, pos
    curve[previous:count] = [value] * (count - previous)
    return curve


def _adjustment_reason(result: HbmResult, sim: Simulation, adjustment: int) -> str | None:
    if adjustment == 0:
        return None
    if result.kind == "exact":
        return "XLA's memory-usage report (the exact figure) differs from the simulated curve"
    if sim.host_copies:
        return ("device copies of host-memory arguments: the figure is the middle of the two placements XLA's "
                "scheduler may choose; the curve places them at the program's start")
    if result.kind == "simulated" and adjustment > 0:
        return "holes in XLA's heap: temporaries sit at fixed offsets, so the heap is larger than what is live"
    return "the figure and the curve differ"


def _body_curve(temps: list[BufferLife], window: tuple[int, int]) -> list[int]:
    """Within the window, the bytes of live temporaries defined inside it (the loop body's own)."""
    lo, hi = window
    diff = [0] * (hi - lo + 2)
    for b in temps:
        if lo <= b.start <= hi:
            diff[b.start - lo] += b.bytes
            diff[min(b.end, hi) + 1 - lo] -= b.bytes
    out, run = [], 0
    for d in diff[:-1]:
        run += d
        out.append(run)
    return out


def _loop_window(module: Module, sim: Simulation, loop: str) -> tuple[int, int]:
    """The positions of a while loop's condition and body (placed inline just before the while itself)."""
    name = loop.lstrip("%")
    at = next((p for p, (_, inst) in enumerate(sim.positions, 1) if inst.name == name and inst.opcode == "while"),
              None)
    if at is None:
        raise KeyError(name)
    comp, inst = sim.positions[at - 1]
    inner = _called_closure(module, inst)
    first = at
    while first > 1 and sim.positions[first - 2][0].name in inner:
        first -= 1
    return first, at


def _called_closure(module: Module, inst: Instruction) -> set[str]:
    """Computations a while/call/conditional runs inline, transitively."""
    by_name = module.computations_by_name
    out: set[str] = set()
    todo = [inst]
    while todo:
        current = todo.pop()
        names = [current.attr(a) for a in ("body", "condition", "to_apply")] + list(current.branch_names or ())
        for raw in names:
            comp = by_name.get((raw or "").strip().lstrip("%"))
            if comp is None or comp.name in out:
                continue
            out.add(comp.name)
            todo.extend(i for i in comp.instructions if i.opcode in ("while", "call", "conditional"))
    return out


def _buffer(module: Module, life: BufferLife) -> Buffer:
    named = live_buffer(module, life)
    return Buffer(named.instruction, named.computation, life.value.inst.opcode, life.value.shape.to_text(),
                  life.bytes, life.start, life.end, named.line, named.op_name, named.source)


def op_name_group(op_name: str | None, opcode: str = "", depth: int = DEFAULT_GROUP_DEPTH) -> str:
    """`jit(step)/jvp(Model)/Block_0/mlp/dot_general` -> `jit(step)/jvp(Model)/Block_0` at depth 3: the
    primitive's own name (the last component) is dropped, then at most `depth` components are kept."""
    if not op_name:
        return f"{NO_OP_NAME}: {opcode}" if opcode else NO_OP_NAME
    parts = _split_op_name(op_name)
    scope = parts[:-1] if len(parts) > 1 else parts
    return "/".join(scope[:max(depth, 1)])


def _split_op_name(op_name: str) -> list[str]:
    """Split at `/` outside parentheses and brackets (`transpose(jvp(f/g))` is one component)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(op_name):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "/" and depth == 0:
            parts.append(op_name[start:i])
            start = i + 1
    parts.append(op_name[start:])
    return [p for p in parts if p] or [op_name]


def breakdown(tl: Timeline, buffers: list[Buffer], key) -> list[Share]:
    """The peak split into groups of its live temporaries (largest first), then the flat bands and what the
    figure adds or takes off; the rows add up to `tl.peak_bytes`."""
    groups: dict[str, list[int]] = {}
    for b in buffers:
        entry = groups.setdefault(key(b), [0, 0])
        entry[0] += b.bytes
        entry[1] += 1
    rows = [Share(k, v[0], v[1], "temporaries") for k, v in sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    if tl.vmem_absorbed_bytes:
        rows.append(Share("(small temporaries kept in VMEM by memory-space assignment, estimate)",
                          -tl.vmem_absorbed_bytes, 0, "vmem"))
    for kind in KINDS[:-1]:
        if tl.flat[kind]:
            rows.append(Share(f"({KIND_LABELS[kind]})", tl.flat[kind], 0, kind))
    if tl.adjustment_bytes:
        rows.append(Share(f"({tl.adjustment_reason})", tl.adjustment_bytes, 0, "adjustment"))
    return rows
