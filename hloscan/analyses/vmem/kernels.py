"""Every kernel of a module with its scoped-VMEM estimate, and their wording: shared by the HLO2xx checks and
`hloscan vmem`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator

from hloscan.analyses.tpu import DEFAULT_TPU, MIB, generation
from hloscan.analyses.vmem.estimate import DEFAULT_MARGIN, BlockEstimate, KernelEstimate, estimate_kernel
from hloscan.analyses.vmem.residency import (has_vmem_layout, in_vmem, predict_resident_operands,
                                             predict_resident_results, resident_arrays)
from hloscan.hlo.ir import Computation, Instruction, Module, Shape


# The custom-call target of a Mosaic (Pallas) kernel.
TPU_CUSTOM_CALL = "tpu_custom_call"


@dataclass(frozen=True)
class Kernel:
    """One tpu_custom_call and its estimate."""

    comp: Computation
    inst: Instruction
    estimate: KernelEstimate
    tpu_assumed: bool
    # Operand positions (and len(operands) + result leaf number) predicted to be placed whole in VMEM by
    # XLA's memory-space assignment; the estimate counts no window for them.
    predicted_in_vmem: frozenset[int] = frozenset()


def tpu_custom_calls(module: Module) -> Iterator[tuple[Computation, Instruction]]:
    for comp, inst in module.with_opcode("custom-call"):
        if inst.custom_call_target == TPU_CUSTOM_CALL:
            yield comp, inst


def estimate_module(module: Module, tpu: str | None, vmem_limit_kib: int | None,
                    margin: float = DEFAULT_MARGIN) -> list[Kernel]:
    """Every tpu_custom_call of the module with its estimate; tpu None means v5e, assumed."""
    out = []
    gen = generation(tpu or DEFAULT_TPU)
    calls = list(tpu_custom_calls(module))
    resident: dict[tuple[str, str], frozenset[int]] = {}
    arrays: dict[tuple[str, str], int] = {}  # arrays already placed in VMEM, once each over the module
    for comp in {id(c): c for c, _ in calls}.values():
        comp_calls = [i for c, i in calls if c is comp]
        found = predict_resident_operands(comp, comp_calls, gen, module)
        arrays.update(resident_arrays(module, comp, comp_calls, found))
        resident.update({(comp.name, name): pos for name, pos in found.items()})
    used = sum(arrays.values())
    if not any(has_vmem_layout(comp, inst, results=True) for comp, inst in calls):  # post-optimisation dumps say it already
        for key, pos in predict_resident_results(module, calls, gen, used).items():
            resident[key] = resident.get(key, frozenset()) | pos
    for comp, inst in calls:
        operands = [comp.operand_shape(inst, pos) for pos in range(len(inst.operands))]
        positions = resident.get((comp.name, inst.name), frozenset())
        # Operands memory-space assignment is predicted to hold whole in VMEM get no window (an estimate).
        for pos in positions:
            if pos < len(operands) and operands[pos] is not None and operands[pos].is_array:
                operands[pos] = in_vmem(operands[pos])
        result = _with_resident_results(inst, positions)
        est = estimate_kernel(inst.attr("backend_config"), operands, result, tpu=tpu or DEFAULT_TPU,
                              vmem_limit_kib=vmem_limit_kib, instruction_name=inst.name, margin=margin,
                              residency_predicted=bool(positions))
        predicted = sorted(positions)
        inputs = [str(p) for p in predicted if p < len(inst.operands)]
        results = [str(p - len(inst.operands)) for p in predicted if p >= len(inst.operands)]
        if inputs:
            note = (f"operands {', '.join(inputs)} predicted to be placed whole in VMEM by XLA's "
                    "memory-space assignment (S(1), no window; an estimate from the pre-optimisation dump)")
            est = replace(est, notes=est.notes + (note,))
        if results:
            note = (f"results {', '.join(results)} (read by other kernels or XLA ops, or relaid out after this "
                    "one) predicted to be written whole to VMEM by XLA's memory-space assignment (S(1), no output "
                    "window; an estimate from the pre-optimisation dump)")
            est = replace(est, notes=est.notes + (note,))
        out.append(Kernel(comp, inst, est, tpu is None, positions))
    return out


def _with_resident_results(inst: Instruction, positions: frozenset[int]) -> Shape | list[Shape]:
    """The kernel's result shape with the leaves predicted to stay in VMEM marked S(1) (positions past the
    operands, see `predict_resident_results`)."""
    leaves = {pos - len(inst.operands) for pos in positions if pos >= len(inst.operands)}
    if not leaves:
        return inst.shape
    if not inst.shape.is_tuple:
        return in_vmem(inst.shape) if 0 in leaves else inst.shape
    return [in_vmem(leaf) if i in leaves and leaf.is_array else leaf
            for i, (_, leaf) in enumerate(inst.shape.leaves())]


# ------------------------------------------------------------------------------------------ wording


def mib(n: int) -> str:
    """`17.00 MiB (17825792 bytes)`: MiB for reading, exact bytes for comparing with XLA's message."""
    return f"{n / MIB:.2f} MiB ({n} bytes)"


def figure_label(est: KernelEstimate) -> str:
    if est.kind == "measured":
        return "measured scoped VMEM (used_scoped_memory_configs)"
    if est.kind == "whole-array":
        return "scoped VMEM estimate (whole arrays, kernel body not decoded)"
    if est.figure_kind == "exact":
        return "scoped VMEM estimate (exact: windows, scratch and the body's own allocations, all read from the kernel)"
    if est.range_bytes is None:  # no allowance with a spread (or a measured figure, handled above)
        return "scoped VMEM estimate (lower bound)"
    low, high = est.range_bytes
    parts = [f"includes a {mib(est.internal_bytes)} allowance for compiler-internal scratch"] if est.internal_bytes else []
    if high is None:
        return f"scoped VMEM estimate (lower bound; {'; '.join(parts)})"
    if est.spill_bound_bytes and high >= est.estimate_bytes + est.spill_bound_bytes:
        parts.append(f"up to {est.spill_bound_bytes / MIB:.2f} MiB more if the register allocator spills every "
                     "vector value the body computes whole")
    else:
        parts.append("with its measured spread")
    return f"scoped VMEM estimate (range {low / MIB:.2f}-{high / MIB:.2f} MiB; {'; '.join(parts)})"


def tpu_label(est: KernelEstimate, assumed: bool) -> str:
    return f"{est.tpu} (assumed; set --tpu or tpu in the config)" if assumed else est.tpu


def limit_label(est: KernelEstimate, assumed: bool) -> str:
    tpu = tpu_label(est, assumed)
    sources = {
        "vmem_limit_bytes": "the kernel's vmem_limit_bytes",
        "option": "the vmem_limit_kib setting (--vmem-limit-kib or config)",
        "default": "the default scoped limit",
        "physical": "physical VMEM",
    }
    return f"{sources.get(est.limit_source, est.limit_source)} on {tpu}"


def hint_text(est: KernelEstimate) -> str | None:
    """The two fixes, with numbers for this kernel: raise vmem_limit_bytes, or shrink blocks."""
    parts = []
    if est.fitting_limit_bytes is not None:
        parts.append(f"raise the limit: compiler_params vmem_limit_bytes={est.fitting_limit_bytes} "
                     f"({est.fitting_limit_bytes // MIB} MiB)")
    if est.block_hint is not None:
        h = est.block_hint
        roles = {b.index: b.role for b in est.blocks if b.role != "scratch"}
        sizes = ", ".join(f"{roles.get(i, 'operand')} {i} axis {a} -> {n}" for i, a, n in h.block_sizes)
        parts.append(f"or shrink blocks along grid dim {h.grid_dim} ({sizes}; grid extent {h.grid_size}, "
                     f"about {h.estimate_bytes / MIB:.2f} MiB)")
    return "; ".join(parts) or None


# ------------------------------------------------------------------------------------------ data


def block_json(b: BlockEstimate) -> dict[str, Any]:
    return {
        "index": b.index, "role": b.role, "dtype": b.dtype, "block_shape": list(b.block_shape),
        "full_shape": None if b.full_shape is None else list(b.full_shape), "memory_space": b.memory_space,
        "tile": list(b.tile), "raw_bytes": b.raw_bytes, "padded_bytes": b.padded_bytes, "buffers": b.buffers,
        "counted": b.counted, "total_bytes": b.total_bytes, "note": b.note,
    }


def estimate_json(est: KernelEstimate, assumed: bool) -> dict[str, Any]:
    """The estimate as plain data (finding data and `hloscan vmem --format json`)."""
    hint = est.block_hint
    return {
        "name": est.kernel_name,
        "grid": [d if d >= 0 else None for d in est.grid],  # None: a dynamic grid dimension (gmm's groups)
        "blocks": [block_json(b) for b in est.blocks],
        "estimate_bytes": est.estimate_bytes,
        "predicted_bytes": est.predicted_bytes,
        "kind": est.kind,
        "figure_kind": est.figure_kind,
        "body_bytes": est.body_bytes,
        "limit_bytes": est.limit_bytes,
        "limit_source": est.limit_source,
        "verdict": est.verdict,
        "tpu": est.tpu,
        "tpu_assumed": assumed,
        "internal_bytes": est.internal_bytes,
        "range_bytes": None if est.range_bytes is None else list(est.range_bytes),
        "spill_bound_bytes": est.spill_bound_bytes,
        "allowances": [{"rule": a.rule, "bytes": a.size, "low_bytes": a.low, "high_bytes": a.high,
                        "spread": [a.spread.low, a.spread.high], "measured_kernels": a.spread.kernels}
                       for a in est.allowances],
        "fitting_limit_bytes": est.fitting_limit_bytes,
        "block_hint": None if hint is None else {
            "grid_dim": hint.grid_dim, "grid_size": hint.grid_size, "estimate_bytes": hint.estimate_bytes,
            "block_sizes": [{"operand": i, "axis": a, "size": n} for i, a, n in hint.block_sizes],
        },
        "notes": list(est.notes),
        "lower_bound_note": est.lower_bound_note,
        "decode_error": est.decode_error,
    }
