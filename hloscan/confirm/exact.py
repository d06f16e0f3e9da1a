"""`hloscan vmem --exact`: each tpu_custom_call alone in a minimal module (parameters of the same operand
shapes and minor-to-major layouts, the call with the same backend_config), so the compiler's exact
scoped-VMEM figure for one kernel costs a few seconds instead of a whole-program compile.

Alone, memory-space assignment may place the kernel's operands and results otherwise than in the whole
program (placement.py), and the figure then differs by their windows. Each figure says where the whole
program placed them (a post-optimisation dump: this one or the after_codegen / after_optimizations file
beside it; else hloscan's prediction), what differs, and the figure moved to the whole program's placement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from hloscan.analyses.vmem.kernels import estimate_module, tpu_custom_calls
from hloscan.confirm.placement import Placement, differences, moved_figure, result_leaves
from hloscan.confirm.readback import CompiledKernel, mosaic_body
from hloscan.confirm.topology import generation_of
from hloscan.hlo.dump_names import stage_sibling
from hloscan.hlo.ir import Computation, Instruction, Layout, Module, Shape, resolve_operand_shape
from hloscan.hlo.loader import load_file


@dataclass(frozen=True)
class KernelModule:
    instruction: str
    line: int
    text: str | None  # the minimal module's HLO text; None when it could not be built (`problem` says why)
    problem: str | None = None


def kernel_modules(module: Module) -> list[KernelModule]:
    return [kernel_module(module, comp, inst) for comp, inst in tpu_custom_calls(module)]


def kernel_module(module: Module, comp: Computation, inst: Instruction) -> KernelModule:
    producers = comp.by_name
    shapes = [resolve_operand_shape(o, producers) for o in inst.operands]
    missing = [i for i, s in enumerate(shapes) if s is None]
    if missing or inst.shape is None:
        return KernelModule(inst.name, inst.line, None, f"operand {missing[0] if missing else '?'} has no known shape")
    params = [entry_shape(s).to_text() for s in shapes]
    result = entry_shape(inst.shape).to_text()
    lines = [f"HloModule exact_{_safe(inst.name)}, entry_computation_layout={{({', '.join(params)})->{result}}}",
             "", "ENTRY %main {"]
    lines += [f"  %p{i} = {p} parameter({i})" for i, p in enumerate(params)]
    operands = ", ".join(f"%p{i}" for i in range(len(params)))
    lines += [f"  ROOT %{inst.name} = {result} custom-call({operands}){without_metadata(inst.attrs_text)}", "}", ""]
    return KernelModule(inst.name, inst.line, "\n".join(lines))


def entry_shape(shape: Shape) -> Shape:
    """`shape` with its minor-to-major layout only: the HLO->MLIR conversion refuses tiles ("Tiled layout is
    not supported yet") and memory spaces, which a post-optimisation dump prints, and alone every operand is
    an entry parameter in HBM anyway."""
    if shape.is_tuple:
        return replace(shape, tuple_shapes=tuple(entry_shape(s) for s in shape.tuple_shapes))
    if shape.layout is None:
        return shape
    return replace(shape, layout=Layout(shape.layout.minor_to_major))


def _safe(name: str) -> str:
    return re.sub(r"[^\w.\-]", "_", name)


def without_metadata(attrs_text: str) -> str:
    """The attribute tail without `metadata={...}`: its stack_frame_id points into the original module's
    stack-frame tables, which the minimal module does not have."""
    at = attrs_text.find("metadata={")
    while at > 0 and not attrs_text[:at].rstrip().endswith(","):
        at = attrs_text.find("metadata={", at + 1)
    if at < 0:
        return attrs_text
    end = _closing_brace(attrs_text, at + len("metadata="))
    start = attrs_text.rfind(",", 0, at)
    return attrs_text[:start] + attrs_text[end + 1:]


def _closing_brace(text: str, open_at: int) -> int:
    depth, quoted, escaped = 0, False, False
    for i in range(open_at, len(text)):
        ch = text[i]
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted if (escaped or ch != '"') else False
            continue
        if ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text) - 1


@dataclass(frozen=True)
class WholeKernel:
    """One kernel as the whole program placed it: its operand and result shapes, where they lived, and where
    that was read."""

    operands: tuple[Shape | None, ...]
    result: Shape | None
    placement: Placement
    source: str


PREDICTED = "predicted by hloscan: no post-optimisation dump of the whole program beside it"


def whole_kernels(module: Module, path: str | None, tpu: str) -> dict[str, WholeKernel]:
    """{kernel instruction name: its whole-program placement}: from `module` itself when it is a
    post-optimisation dump (tiled layouts), else from the after_codegen / after_optimizations file beside
    `path` (kernels matched by their Mosaic body), else hloscan's residency prediction."""
    calls = list(tpu_custom_calls(module))
    if any(_post_layout(comp, inst) for comp, inst in calls):
        return {inst.name: _as_placed(comp, inst, "this module, after optimisation") for comp, inst in calls}
    compiled = _sibling_kernels(path)
    if compiled is not None:
        source, by_body = compiled
        out = {}
        for _, inst in calls:
            found = by_body.get(mosaic_body(inst))
            if found is not None:
                out[inst.name] = _as_placed(*found, source)
        return out
    return {k.inst.name: _predicted(k.comp, k.inst, k.predicted_in_vmem) for k in estimate_module(module, tpu, None)}


def _post_layout(comp: Computation, inst: Instruction) -> bool:
    shapes = [comp.operand_shape(inst, i) for i in range(len(inst.operands))] + result_leaves(inst.shape)
    return any(s is not None and s.layout is not None and s.layout.tiles for s in shapes)


def _operands(comp: Computation, inst: Instruction) -> tuple[Shape | None, ...]:
    return tuple(comp.operand_shape(inst, i) for i in range(len(inst.operands)))


def _as_placed(comp: Computation, inst: Instruction, source: str) -> WholeKernel:
    operands = _operands(comp, inst)
    return WholeKernel(operands, inst.shape, Placement.of(operands, inst.shape), source)


def _predicted(comp: Computation, inst: Instruction, in_vmem: frozenset[int]) -> WholeKernel:
    operands = _operands(comp, inst)
    placement = Placement.predicted(len(operands), len(result_leaves(inst.shape)), in_vmem)
    return WholeKernel(operands, inst.shape, placement, PREDICTED)


def _sibling_kernels(path: str | None) -> tuple[str, dict[str | None, tuple[Computation, Instruction]]] | None:
    """The post-optimisation file beside a dump file, and its kernels by Mosaic body (None: there is none,
    or it does not parse)."""
    for stage in ("after_codegen", "after_optimizations"):
        sibling = stage_sibling(path, stage) if path else None
        if sibling is None:
            continue
        loaded = load_file(sibling)
        if loaded.ok:
            by_body = {mosaic_body(inst): (comp, inst) for m in loaded.modules for comp, inst in tpu_custom_calls(m)}
            return Path(sibling).name, by_body
    return None


@dataclass(frozen=True)
class ExactFigure:
    """One kernel compiled alone: the compiler's scoped VMEM for it, or why there is none; and how the
    placement of its operands and results alone compares with the whole program's."""

    instruction: str
    line: int
    status: str  # the worker's: compiled, compile_error, convert_error, timeout, ...
    scoped_bytes: int | None
    error: str | None
    wall_s: float
    placement_source: str | None = None  # where the whole program's placement was read (or PREDICTED)
    differences: tuple[str, ...] = ()  # what the whole program placed otherwise, in words
    placed_bytes: int | None = None  # the alone figure moved to the whole program's placement
    alone: CompiledKernel | None = field(default=None, repr=False)  # the kernel as compiled alone


def exact_figures(module: Module, topology: str, python: str, timeout: float,
                  path: str | None = None) -> list[ExactFigure]:
    """Each tpu_custom_call of `module` (read from `path`) compiled alone for `topology`, one process per
    kernel, beside the whole program's placement of its operands and results."""
    from hloscan.confirm.runner import run_worker, worker_request  # here: the analyses above need no process machinery

    tpu = generation_of(topology)
    whole = whole_kernels(module, path, tpu)
    calls = {inst.name: inst for _, inst in tpu_custom_calls(module)}
    out = []
    for km in kernel_modules(module):
        if km.text is None:
            out.append(ExactFigure(km.instruction, km.line, "convert_error", None, km.problem, 0.0))
            continue
        result = run_worker(worker_request(km.text, topology), python, timeout)
        figure = ExactFigure(km.instruction, km.line, result.status, None, result.error, result.wall_s)
        # Alone, the kernel is the module's only tpu_custom_call: its figure and placement are the module's.
        if len(result.kernels) == 1:
            figure = compared(figure, result.kernels[0], whole.get(km.instruction), calls[km.instruction], tpu)
        out.append(figure)
    return out


def compared(figure: ExactFigure, alone: CompiledKernel, whole: WholeKernel | None, inst: Instruction,
             tpu: str) -> ExactFigure:
    """`figure` with the alone compile's figure, and its placement against the whole program's."""
    figure = replace(figure, scoped_bytes=alone.scoped_bytes, alone=alone)
    if whole is None:
        return figure
    here = Placement.of(alone.operands, alone.result)
    moved = differences(whole.placement, here)
    placed = alone.scoped_bytes if not moved else moved_figure(
        alone.scoped_bytes, inst.attr("backend_config"), whole.operands, whole.result, whole.placement, here, tpu)
    return replace(figure, placement_source=whole.source, differences=tuple(moved), placed_bytes=placed)
