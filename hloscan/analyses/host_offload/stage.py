"""Where a dump sits relative to XLA's HostOffloader, which decides both E1200 and host compute.

Before the offloader (before_optimizations, jax-lowered text, pass dumps up to host-offloader) the moves are
`MoveToHost`/`MoveToDevice` custom calls and `annotate_device_placement` annotations, and the walk in
`hloscan.host_offload` replays what the offloader will do. After it, memory spaces are in the layouts and the
moves are XLA's own DMAs: `copy-start`/`copy-done` pairs and async `(dynamic-)slice`/`dynamic-update-slice`
between S(5) and device memory. A dump XLA produced after the offloader means the offloader succeeded: E1200
cannot hold there, and any host compute left is the offloader's own, already-made decision.
"""

from __future__ import annotations

from hloscan.hlo.dump_names import stage_of
from hloscan.hlo.ir import HOST_MEMORY_SPACE, Computation, Instruction, Module

# Stages XLA writes only once the whole HLO pipeline (host offloader included) has run.
PAST_OFFLOADER_STAGES = ("after_optimizations", "after_codegen")
# Annotations the offloader consumes: none is left in a dump it has processed.
_MOVE_TARGETS = frozenset({"MoveToHost", "MoveToDevice", "PipelineForward", "PipelineBackward",
                           "annotate_device_placement"})
# Ops that carry a host<->device DMA once the offloader has run (directly or as the body of an async pair).
DMA_OPCODES = frozenset({"copy-start", "copy-done", "copy", "slice", "dynamic-slice", "dynamic-update-slice",
                         "bitcast", "parameter", "tuple", "get-tuple-element"})


def past_offloader(module: Module, path: str | None) -> str | None:
    """Why `module` was dumped after XLA's host offloader ran, or None when it is (or may be) earlier."""
    stage = stage_of(path or "")
    if stage in PAST_OFFLOADER_STAGES:
        return f"{stage} dump"
    if (module.attr("is_scheduled") or "").lower() == "true":
        return "scheduled module (is_scheduled=true)"
    if _has_offloader_dmas(module) and not _has_move_annotations(module):
        return "host<->device DMAs in the layouts and no MoveToHost/MoveToDevice left"
    return None


def compiler_went_past(group_stages: tuple[str, ...]) -> str | None:
    """A later stage of the same module in the folder: the compiler accepted the module past the offloader."""
    for stage in PAST_OFFLOADER_STAGES:
        if stage in group_stages:
            return f"{stage} of this module is in the folder"
    return None


def _has_move_annotations(module: Module) -> bool:
    return any(inst.custom_call_target in _MOVE_TARGETS for _, inst in module.with_opcode("custom-call"))


def _has_offloader_dmas(module: Module) -> bool:
    """A copy-start whose destination or source is S(5): only XLA's offloader and memory-space assignment
    print those (hand-written pre-offloader text moves data with MoveToHost)."""
    return any(_touches_host(comp, inst) for comp, inst in module.with_opcode("copy-start"))


def _touches_host(comp: Computation, inst: Instruction) -> bool:
    shapes = [inst.shape] + [comp.operand_shape(inst, pos) for pos in range(len(inst.operands))]
    return any(leaf.memory_space == HOST_MEMORY_SPACE for s in shapes if s is not None for _, leaf in s.leaves())
