"""Per-module HBM figures: XLA's own report when present, else a simulation (scheduled dump) or a
prediction (before optimizations / jax-lowered HLO)."""

from __future__ import annotations

import dataclasses
import os

from hloscan.hlo.attrs import parse_metadata
from hloscan.hlo.ir import Module
from hloscan.analyses.tpu import generation as tpu_generation
from hloscan.hlo.layout import tuple_table_bytes
from hloscan.hlo.signature import Signature, module_signature
from hloscan.hlo.source import source_location
from hloscan.analyses.hbm.capacity import DEFAULT_GENERATION, capacity_bytes, verdict
from hloscan.analyses.hbm.liveness import HBM_SPACE, BufferLife, Simulation, simulate
from hloscan.analyses.hbm.model import HbmResult, LiveBuffer
from hloscan.analyses.hbm.partition import sharding_summary
from hloscan.hlo.sharding import unpartitioned_devices
from hloscan.analyses.hbm.reports import XlaReport, read_report

LIVE_LIMIT = 10


def stage_of(path: str, module: Module) -> str:
    base = os.path.basename(path)
    for stage in ("before_optimizations", "after_optimizations"):
        if stage in base:
            return stage
    return "after_optimizations" if module.attr("is_scheduled") == "true" else "before_optimizations"


def compiled_for_another_backend(module: Module) -> bool:
    """A scheduled module whose entry layouts carry no TPU tiles was compiled for CPU or GPU: XLA:TPU tiles
    every array and scalar it lays out (`{1,0:T(8,128)}`, `{:T(128)}`), so TPU HBM does not apply to it."""
    if module.attr("is_scheduled") != "true":
        return False  # before optimisation: a prediction for a TPU compile
    layout = module.attr("entry_computation_layout") or ""
    if "T(" in layout:
        return False
    params = module.entry.parameter_instructions.values()
    return not any(p.shape is not None and "T(" in p.shape.to_text() for p in params)


def entry_figures(sig: Signature, generation: str, module: Module) -> tuple[int, int, int]:
    """Arguments, outputs and aliased bytes in HBM, as memory_analysis() counts them (tuple tables included)."""
    args = sum(p.bytes for p in sig.parameters if p.memory_space == HBM_SPACE)
    outs = sum(o.bytes for o in sig.outputs if o.memory_space == HBM_SPACE)
    aliased = sum(o.bytes for o in sig.outputs if o.memory_space == HBM_SPACE and o.aliases)
    granule = tpu_generation(generation).tuple_table_granule
    root = module.entry.root.shape
    if root is not None and root.is_tuple:
        outs += tuple_table_bytes(root, granule)
    for inst in module.entry.parameter_instructions.values():
        if inst.shape is not None and inst.shape.is_tuple:
            args += tuple_table_bytes(inst.shape, granule)
    return args, outs, aliased


def analyze_module(module: Module, path: str, generation: str | None, use_reports: bool = True,
                   report: XlaReport | None = None) -> HbmResult:
    gen = generation or DEFAULT_GENERATION
    stage = stage_of(path, module)
    sig = module_signature(module, resolve_source=lambda m, i: None)
    args, outs, aliased = entry_figures(sig, gen, module)
    scheduled = module.attr("is_scheduled") == "true"
    sim = simulate(module, predict=not scheduled, generation=gen)
    devices = unpartitioned_devices(module)
    if devices > 1:
        # Not partitioned yet: the signature is global; one device holds the shards the simulation sized.
        args = sum(b.bytes for b in sim.buffers if b.role == "parameter")
        outs = sum(b.bytes for b in sim.buffers if b.role == "output")
        aliased = 0
    own_outputs = sum(b.bytes for b in sim.buffers if b.role == "output")
    constants = sum(b.bytes for b in sim.buffers if b.role == "constant")
    temps = sim.peak_bytes
    host_copy_note = None
    if not scheduled and sim.host_copies:
        sim, temps, host_copy_note = _with_host_copies_hoisted(module, gen, sim)
    total = args + min(own_outputs, max(outs - aliased, 0)) + temps + constants
    kind = "simulated" if scheduled else "predicted"
    notes = []
    cap = capacity_bytes(gen)
    exact = use_reports and report is not None and report.total_bytes is not None
    if sim.kept_scores and total > cap and not host_copy_note and not exact:
        sim, total, note = _with_scores_rematerialized(module, gen, sim, total)
        temps = sim.peak_bytes
        notes.append(note)
    if exact:
        kind = "exact"
        total = report.total_bytes
        temps = report.temp_heap_bytes or temps
        notes.append(f"figures from {os.path.basename(report.path)}")
    result = HbmResult(path, module.name, stage, kind, gen, generation is None, cap, args, outs, aliased, temps,
                       total, total, verdict(total, cap), notes=notes)
    if host_copy_note and kind == "predicted":
        notes.append(host_copy_note)
    if devices > 1 and kind == "predicted":
        result.devices = devices
        result.sharding = sharding_summary(module)
        notes.append(f"per device: {devices} partitions; global shapes divided as the module's shardings say "
                     f"({result.sharding}), propagated to the unannotated instructions (estimate)")
    result.live_at_peak = live_buffers(module, sim)
    if sim.positions and 0 < sim.peak_position <= len(sim.positions):
        comp, inst = sim.positions[sim.peak_position - 1]
        result.peak_instruction, result.peak_line = inst.name, inst.line
    return result


def _with_host_copies_hoisted(module: Module, gen: str, late: Simulation) -> tuple[Simulation, int, str]:
    """A prediction with device copies of host-memory arguments (offloaded optimizer state moved back for the
    update): XLA makes each an async copy, and its scheduler starts them anywhere from the program's start
    (fsdp_L16_opt_host on v6e: most before the forward loop) to just before their use (phi_fsdp_opt_host_L16
    on v5e: after the backward loop). Both placements are simulated; the figure is the middle of the two
    peaks, and the note gives the range."""
    early = simulate(module, predict=True, generation=gen, hoist_host_copies=True)
    low, high = sorted((late.peak_bytes, early.peak_bytes))
    note = (f"{late.host_copies} host-memory argument(s) copied to the device: temporaries between "
            f"{low / 2**30:.2f}G (copies at their use) and {high / 2**30:.2f}G (copies at the program's start) "
            f"by where XLA's scheduler starts them; the figure takes the middle")
    return early, (low + high) // 2, note


def _with_scores_rematerialized(module: Module, gen: str, kept: Simulation, total: int) -> tuple[Simulation, int, str]:
    """A prediction over capacity that keeps f32 scores masked per example: XLA's rematerialisation, which
    runs only when the program does not fit, recomputes them in their readers instead (two OOM prefill
    steps of sharded9 and an accepted 70B prefill of sharded19 on v7x were within 9% of the figure without
    them, 25-40% over with them)."""
    fused = simulate(module, predict=True, generation=gen, keep_masked_scores=False)
    lower = total - kept.peak_bytes + fused.peak_bytes
    note = (f"{kept.kept_scores} masked score buffer(s) over capacity when kept in f32 "
            f"({total / 2**30:.2f}G): figured as XLA's rematerialisation recomputes them in their readers")
    return fused, lower, note


def live_buffers(module: Module, sim: Simulation, limit: int = LIVE_LIMIT) -> list[LiveBuffer]:
    """The largest buffers live at the peak; a leaf of a tuple-shaped instruction is named with its shape
    index (`%while.3{2}`), and a second buffer of one instruction (a loop's copy of a broadcast) as a copy."""
    out, seen = [], {}
    for b in sim.live_at_peak()[:limit]:
        live = live_buffer(module, b)
        key = live.instruction
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            live = dataclasses.replace(live, instruction=f"{key} (copy {seen[key]})")
        out.append(live)
    return out


def live_buffer(module: Module, life: BufferLife) -> LiveBuffer:
    """One buffer named as a finding names it: its instruction (with the leaf's shape index), one device's
    shape, op_name and Python source line."""
    inst = life.value.inst
    op_name = parse_metadata(inst.attr("metadata")).get("op_name")
    try:
        loc = source_location(module, inst)
    except Exception:  # noqa: BLE001 - a broken stack-frame table must not break the figures
        loc = None
    index = "{" + ",".join(map(str, life.value.index)) + "}" if life.value.index else ""
    return LiveBuffer(inst.name + index, _device_shape_text(life), life.bytes, str(op_name) if op_name else None,
                      None if loc is None else str(loc), inst.line, life.value.comp.name)


def _device_shape_text(life: BufferLife) -> str:
    """The buffer's shape as one device holds it: the shard's dims when known, else the global shape and the
    number of pieces."""
    shape, split = life.value.shape, life.value.split
    if split is None or split.pieces <= 1:
        return shape.to_text()
    local = split.local_shape(shape)
    if local is not None:
        return f"{local.to_text()} (shard of {shape.to_text()})"
    return f"{shape.to_text()} / {split.pieces} devices"


def analyze_modules(modules: list[Module], path: str, generation: str | None,
                    use_reports: bool = True) -> list[HbmResult]:
    """One result per module; a sibling report describes the file's one compiled module only."""
    report = read_report(path) if use_reports and len(modules) == 1 else None
    return [analyze_module(m, path, generation, use_reports, report) for m in modules]
