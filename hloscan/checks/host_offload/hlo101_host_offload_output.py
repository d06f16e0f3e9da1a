"""HLO101: a tensor moved to host memory reaches an entry output that is not declared in host memory (E1200)."""

from __future__ import annotations

import dataclasses
from typing import Iterator

from hloscan.lint.context import Context
from hloscan.lint.finding import (START_COMPUTATION_KEY, START_KEY, TRACE_KEY, Finding, Related, Severity,
                                  SourceLocation, Span)
from hloscan.analyses.host_offload.stage import compiler_went_past, past_offloader
from hloscan.analyses.host_offload.walk import OutputHit, Step, xla_names
from hloscan.checks.host_offload import HOST_OFFLOAD, context_analysis
from hloscan.lint.registry import Check, register

HINT = ("declare output {n} in host memory (jax: out_shardings=...with_memory_kind(\"pinned_host\"), i.e. S(5) in "
        "the result layout), or move the value back to device before returning it "
        "(jax.device_put(x, jax.memory.Space.Device) / MoveToDevice)")


@register
class HostOffloadOutputMismatch(Check):
    """A tensor moved to host memory is returned from an entry output whose layout is not host memory.

    ## What it flags

    The entry ROOT output (at a precise tuple index) that a host-memory value reaches, replaying XLA's
    `HostOffloader` walk: starts are `MoveToHost` custom calls and `annotate_device_placement` with
    `_xla_buffer_placement="pinned_host"`/`"unpinned_host"`, S(5) entry parameters and host outputs of
    `tpu_custom_call` kernels. The walk follows tuples and get-tuple-elements by index, bitcasts, copies,
    reshapes, compute (host compute does not end it), dynamic-update-slice, `call`, `while` body and
    condition, `conditional` branches, async wrappers and aliasing custom calls. It ends at `MoveToDevice`
    and at (dynamic-)slices that feed a `MoveToDevice`. A bare annotated ROOT is not flagged (XLA copies it
    to host without checking). The finding names the instruction XLA calls "starting from" and carries the
    whole path in `data.path`.

    The declared output memory space comes from `entry_computation_layout` (S(5) = host), else
    `out_memory_spaces` in the module's frontend_attributes, else the ROOT's printed shape (XLA's parser
    copies it into the entry layout). `--host-outputs 0,2` declares those flat outputs host in addition.

    Stage: the check reads the text before XLA's host offloader (before_optimizations, jax-lowered text,
    pass dumps up to host-offloader). A dump XLA wrote after the offloader (after_optimizations,
    after_codegen, a scheduled module, or one whose moves are already copy-start/copy-done DMAs to S(5)) means
    the offloader succeeded, so nothing is reported there, nor on a before_optimizations file whose
    after_optimizations/after_codegen sits beside it.

    jax's `lowered.as_text()` drops output memory kinds. When a dump states no memory space anywhere
    (no `out_memory_spaces`, no `S(n)` in the entry layout, only frontend `annotate_device_placement`
    annotations) and `--host-outputs` is not given, the finding is a **note** that says the output memory
    space is unknown, instead of an error.

    ## Why it matters

    XLA fails the compile with `E1200: CompileTimeHostOffloadOutputLocationMismatch: Tensor which is moved
    to host (starting from X) is returned from the entry computation but the layout for this output is not
    set to host memory.` Only the first offending walk is reported by XLA; hloscan reports every output.

    ## Example

    ```hlo
    HloModule m, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, f32[8]{0})}

    ENTRY main {
      p = f32[8]{0} parameter(0)
      c = f32[8]{0} cosine(p)
      h = f32[8]{0} custom-call(p), custom_call_target="MoveToHost"
      ROOT t = (f32[8]{0}, f32[8]{0}) tuple(c, h)
    }
    ```

    ## Fix

    ```hlo
    HloModule m, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, f32[8]{0:S(5)})}

    ENTRY main {
      p = f32[8]{0} parameter(0)
      c = f32[8]{0} cosine(p)
      h = f32[8]{0} custom-call(p), custom_call_target="MoveToHost"
      ROOT t = (f32[8]{0}, f32[8]{0}) tuple(c, h)
    }
    ```

    ## Options

    `host_outputs`: flat entry output numbers (jax's output order) declared in host memory, for dumps that
    carry no memory kinds. Set with `--host-outputs 0,2`.

    ## References

    XLA `xla/hlo/transforms/host_offloader.cc` (`WalkDownHostMemoryOffloadPaths`),
    `xla/service/host_offload_utils.cc` (`GetSuccessors`), https://openxla.org/xla/errors/error_1200
    """

    code = "HLO101"
    name = "host-offload-output-mismatch"
    severity = Severity.ERROR
    xla_error = "E1200"
    family = HOST_OFFLOAD
    # The offloader decides E1200; after it, the moves are XLA's own DMAs and the walk no longer applies.
    stage = "before_optimizations"

    def run(self, ctx: Context) -> Iterator[Finding]:
        if past_offloader(ctx.module, ctx.path) or compiler_went_past(ctx.group_stages):
            return  # XLA's offloader ran and succeeded on this module: E1200 cannot hold
        analysis = context_analysis(ctx, self)
        first = analysis.first_mismatch
        names = xla_names(ctx.module) if analysis.mismatches else {}
        for hit in analysis.mismatches:
            yield self._finding(ctx, hit, hit is first, names)

    def _finding(self, ctx: Context, hit: OutputHit, xla_first: bool, names: dict) -> Finding:
        module = ctx.module
        root = module.entry.root
        start = hit.offload.start
        output = _index_text(hit.output_index)
        what = f"entry output {output}" if hit.output_index else "the entry result"
        xla_name = names.get((start.computation, start.instruction), start.instruction)
        # XLA's passes may rebuild the instruction under a new name before the offloader runs: say both.
        renamed = f", which XLA will name {xla_name}" if xla_name != start.instruction else ""
        message = (f"{what} holds a tensor moved to host (starting from {start.instruction}{renamed}) "
                   f"but is declared {hit.declared.layout} ({hit.declared.source}), not host memory S(5)")
        severity = None
        if not hit.declared.known:
            severity = Severity.NOTE
            message += ("; output memory space unknown: the dump records no memory kinds (jax lowered.as_text()?), "
                        "pass --host-outputs to decide")
        if hit.declared.option_overruled:
            message += ("; note: host_outputs (--host-outputs or config) lists this output, but the dump declares it "
                        "in device memory, and XLA compiles what the dump declares")
        numbers = ",".join(map(str, hit.output_leaves)) or output
        finding = self.finding(ctx, module.entry, root, message, hint=HINT.format(n=numbers),
                               data=_data(hit, xla_first, names), related=_related(ctx, hit), severity=severity)
        source = _path_source(ctx, hit.path)
        return dataclasses.replace(finding, source=source) if source is not None else finding


def _index_text(index: tuple[int, ...]) -> str:
    return "{" + ",".join(map(str, index)) + "}"


def _data(hit: OutputHit, xla_first: bool, names: dict) -> dict:
    start = hit.offload.start
    return {
        # the name XLA prints: passes before the offloader (call inlining, layout assignment) rename it
        "starting_from": names.get((start.computation, start.instruction), start.instruction),
        START_KEY: start.instruction,
        START_COMPUTATION_KEY: hit.offload.start.computation,
        "offload_kind": hit.offload.kind,
        "origin": hit.offload.origin.instruction,
        "output_index": list(hit.output_index),
        "output_numbers": list(hit.output_leaves),
        "declared_layout": hit.declared.layout,
        "declared_source": hit.declared.source,
        "memory_space_known": hit.declared.known,
        "xla_reports_this": xla_first,  # XLA stops at the first offending walk
        TRACE_KEY: [s.to_dict() for s in hit.path],
    }


def _related(ctx: Context, hit: OutputHit) -> tuple[Related, ...]:
    out = [_related_step(ctx, hit.offload.start, "offload walk starts here (XLA's \"starting from\")")]
    if hit.offload.origin != hit.offload.start:
        out.append(_related_step(ctx, hit.offload.origin, f"moved to host here ({hit.offload.kind})"))
    return tuple(out)


def _related_step(ctx: Context, step: Step, note: str) -> Related:
    inst = ctx.module.computations_by_name[step.computation].by_name[step.instruction]
    source = ctx.source_of(inst)
    if source is not None:
        note += f"; source {source}"
    return Related(Span(ctx.path, inst.line, inst.col), note)


def _path_source(ctx: Context, path: tuple[Step, ...]) -> SourceLocation | None:
    """The Python line nearest the output: ROOT tuples rarely carry metadata, their operands do."""
    for step in reversed(path):
        inst = ctx.module.computations_by_name[step.computation].by_name[step.instruction]
        loc = ctx.source_of(inst)
        if loc is not None:
            return SourceLocation(loc.file, loc.line, loc.function)
    return None
