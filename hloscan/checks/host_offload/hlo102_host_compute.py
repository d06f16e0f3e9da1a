"""HLO102: compute on a value that lives in host memory (S(5)), which XLA turns into slow host compute."""

from __future__ import annotations

from typing import Iterator

from hloscan.hlo.attrs import parse_frontend_attributes
from hloscan.lint.context import Context
from hloscan.lint.finding import Finding, Related, Severity, Span
from hloscan.hlo.graph import called_computations
from hloscan.analyses.host_offload.stage import DMA_OPCODES, past_offloader
from hloscan.analyses.host_offload.walk import HostOffloadAnalysis, Key
from hloscan.checks.host_offload import HOST_OFFLOAD, context_analysis
from hloscan.hlo.ir import HOST_MEMORY_SPACE, Computation, Instruction, Module
from hloscan.lint.registry import Check, register

# Data movement and layout ops: legal on host memory (or moved out by HostOffloadLegalize), not compute.
_NOT_COMPUTE = frozenset({
    "copy", "bitcast", "reshape", "transpose", "tuple", "get-tuple-element", "parameter", "constant",
    "dynamic-update-slice", "opt-barrier", "call", "while", "conditional", "custom-call", "async-start",
    "async-update", "async-done", "send", "recv", "send-done", "recv-done", "copy-start", "copy-done",
    "after-all", "add-dependency",
})


@register
class ComputeOnHostValue(Check):
    """A compute op reads a value that lives in host memory (S(5)).

    ## What it flags

    Compute instructions (anything but copies, layout ops, tuples and control flow) with an operand in host
    memory: reached by the host-offload walk (after a `MoveToHost`/`annotate_device_placement` to host, or
    from an S(5) entry parameter) or printed with an `S(5)` layout. A (dynamic-)slice that feeds a
    `MoveToDevice` is a DMA back to the device, not compute. Ops already marked
    `_xla_compute_type="host"` (or inside such a call, e.g. jax `compute_on("device_host")`) are deliberate
    and not flagged.

    Stage: the check reads the text before XLA's host offloader. In a dump written after it
    (after_optimizations, a scheduled module), reads of S(5) buffers are the offloader's own DMAs
    (`copy-start`/`copy-done`, async `slice`/`dynamic-slice`/`dynamic-update-slice`) and are not flagged.

    ## Why it matters

    XLA's host offloader tags such ops `_xla_compute_type="host"` and runs them on the host CPU ("This is
    likely to have a very high overhead"), or fails with `Automatic host compute offloading is disabled.`
    under `--xla_disable_automatic_host_compute_offload=true`.

    ## Example

    ```hlo
    HloModule m, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

    ENTRY main {
      p = f32[8]{0} parameter(0)
      h = f32[8]{0} custom-call(p), custom_call_target="MoveToHost"
      t = f32[8]{0} tanh(h)
      ROOT d = f32[8]{0} custom-call(t), custom_call_target="MoveToDevice"
    }
    ```

    ## Fix

    ```hlo
    HloModule m, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

    ENTRY main {
      p = f32[8]{0} parameter(0)
      h = f32[8]{0} custom-call(p), custom_call_target="MoveToHost"
      d = f32[8]{0} custom-call(h), custom_call_target="MoveToDevice"
      ROOT t = f32[8]{0} tanh(d)
    }
    ```

    ## References

    XLA `xla/hlo/transforms/host_offloader.cc` (`SetHostComputeFrontendAttribute`).
    """

    code = "HLO102"
    name = "compute-on-host-value"
    severity = Severity.WARNING
    family = HOST_OFFLOAD
    # The offloader decides what becomes host compute; its input is where the question is open.
    stage = "before_optimizations"

    def run(self, ctx: Context) -> Iterator[Finding]:
        deliberate: set[str] | None = None  # found on the first candidate: most modules have none
        seen: set[tuple[str, str]] = set()
        if past_offloader(ctx.module, ctx.path):
            # The offloader already ran: reads of S(5) buffers are its async (dynamic-)slice / copy DMAs, and
            # the walk it replaces no longer applies. Only compute printed on an S(5) operand is left to report.
            if not _has_host_shapes(ctx.module):
                return
            candidates = _printed_host_operands(ctx.module, skip=DMA_OPCODES)
        else:
            analysis = context_analysis(ctx, self)  # shared with HLO101
            if not analysis.host_compute and not _has_host_shapes(ctx.module):
                return  # no walked compute and no S(5) shape: no candidate at all
            candidates = _candidates(ctx.module, analysis)
        for comp, inst, operand, origin in candidates:
            if deliberate is None:
                deliberate = _host_computations(ctx.module)
            if (comp.name, inst.name) in seen or comp.name in deliberate or _marked_host(inst):
                continue
            seen.add((comp.name, inst.name))
            yield self._finding(ctx, comp, inst, operand, origin)

    def _finding(self, ctx: Context, comp: Computation, inst: Instruction, operand: str,
                 origin: Instruction | None) -> Finding:
        message = f"{inst.opcode} computes on host-memory value {operand}; XLA runs it as (slow) host compute"
        related = ()
        if origin is not None and origin.name != inst.name:
            related = (Related(Span(ctx.path, origin.line, origin.col), "value moved to host here"),)
        hint = ("move the value back to device first (jax.device_put(x, jax.memory.Space.Device)), or wrap the "
                "computation in compute_on(\"device_host\") if host compute is intended")
        return self.finding(ctx, comp, inst, message, hint=hint, related=related,
                            data={"operand": operand, "origin": origin.name if origin is not None else None})


def _candidates(module: Module, analysis: HostOffloadAnalysis):
    """(computation, compute instruction, host operand name, where it moved to host)."""
    comps = module.computations_by_name
    for key in analysis.host_compute:
        comp = comps[key[0]]
        inst = comp.by_name[key[1]]
        if inst.opcode in _NOT_COMPUTE:
            continue
        parent = analysis.parents.get(key)
        operand = parent[1] if parent is not None and parent[0] == key[0] else "?"
        yield comp, inst, operand, _origin(module, analysis, key)
    yield from _printed_host_operands(module)


def _printed_host_operands(module: Module, skip: frozenset[str] = frozenset()):
    """Compute whose operand is printed with an S(5) layout."""
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode in _NOT_COMPUTE or inst.opcode in skip:
                continue
            for pos, operand in enumerate(inst.operands):
                shape = comp.operand_shape(inst, pos)
                if shape is not None and any(l.memory_space == HOST_MEMORY_SPACE for _, l in shape.leaves()):
                    yield comp, inst, operand.name or "?", None
                    break


def _has_host_shapes(module: Module) -> bool:
    """Whether any instruction or printed operand shape has a host-memory leaf (each distinct shape object
    looked at once)."""
    return any(leaf.memory_space == HOST_MEMORY_SPACE for shape in module.distinct_shapes for _, leaf in shape.leaves())


def _origin(module: Module, analysis: HostOffloadAnalysis, key: Key) -> Instruction | None:
    cursor, seen = key, set()
    while analysis.parents.get(cursor) is not None and cursor not in seen:
        seen.add(cursor)
        cursor = analysis.parents[cursor]
    return module.computations_by_name[cursor[0]].by_name.get(cursor[1])


def _marked_host(inst: Instruction) -> bool:
    raw = inst.attr("frontend_attributes")
    return bool(raw) and parse_frontend_attributes(raw).get("_xla_compute_type") == "host"


def _host_computations(module: Module) -> set[str]:
    """Computations that run on the host on purpose (host threads, compute_on host calls), transitively."""
    out = {c.name for c in module.computations if c.execution_thread and "host" in c.execution_thread}
    for _comp, inst in module.instructions():
        if "=" in inst.attrs_text and _marked_host(inst):
            out.update(name for _, name in called_computations(inst))
    changed = True
    while changed:  # callees of host computations are host too
        changed = False
        for comp in module.computations:
            if comp.name not in out:
                continue
            for inst in comp.instructions:
                for _, name in called_computations(inst) if "=" in inst.attrs_text else ():
                    if name not in out:
                        out.add(name)
                        changed = True
    return out
