"""HLO205: a Pallas/Mosaic kernel needs more VMEM than the chip has ("Ran out of memory in memory space vmem")."""

from __future__ import annotations

from typing import Iterator

from hloscan.analyses.tpu import MIB
from hloscan.analyses.vmem.capacity import capacity
from hloscan.analyses.vmem.kernels import estimate_json, figure_label, hint_text, mib, tpu_label
from hloscan.checks.vmem import VMEM, context_kernels
from hloscan.checks.vmem.examples import fenced, matmul_module
from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, register


@register
class VmemCapacityExceeded(Check):
    __doc__ = f"""A `tpu_custom_call` kernel needs more VMEM than the chip has.

    ## What it flags
    A Pallas/Mosaic kernel whose scoped VMEM (blocks double-buffered along the grid, scratch, internal
    scratch) plus the whole operands memory-space assignment already placed in VMEM (`S(1)` layouts in
    after_optimizations) exceed the chip's VMEM: 16 MiB on v4, 128 MiB on v5e/v6e, 63.94 MiB on v5p,
    64 MiB on v7x. This is what a kernel hits when `vmem_limit_bytes` is raised past physical VMEM (the
    scoped check then passes), and on v4, which has no scoped check. Before compilation the figure is an
    estimate: its allowances for compiler-internal scratch come with their measured range, and program VMEM
    beyond the kernel's operands is not modelled; the finding says so.

    ## Why it matters
    XLA fails the compile with `XLA:TPU compile permanent error. Ran out of memory in memory space vmem.
    Used X of Y vmem` (no E-code); raising `vmem_limit_bytes` further cannot help.

    ## Example
    Blocks (512,2048) (2048,512) (512,512) in f32, double-buffered: 18 MiB on a v4 (16 MiB of VMEM):
    {fenced(matmul_module(vmem_limit_bytes=20 * MIB), 'tpu="v4"')}

    ## Fix
    The same kernel on a chip with room for it (or halve the blocks: 13 MiB fits a v4's 16 MiB):
    {fenced(matmul_module(vmem_limit_bytes=20 * MIB), 'tpu="v5p"')}

    ## Options
    `tpu` and `vmem_limit_kib` come from `--tpu` and `--vmem-limit-kib`.

    ## References
    XLA:TPU memory-space assignment; jax Pallas TPU docs, "Memory spaces" / `vmem_limit_bytes`.
    """

    code = "HLO205"
    name = "vmem-capacity-exceeded"
    severity = Severity.ERROR
    family = VMEM
    stage = "after_codegen"

    def run(self, ctx) -> Iterator[Finding]:
        for kernel in context_kernels(ctx, self):
            est = kernel.estimate
            if est.verdict == "E1001" or est.kind == "measured":
                continue  # the scoped check fires first (HLO201); a measured figure compiled (after_codegen)
            cap = capacity(est)
            if not cap.exceeds and est.verdict != "vmem-oom":
                continue
            what = figure_label(est)
            resident = f" + {mib(cap.resident_bytes)} of whole operands already in VMEM (S(1))" \
                if cap.resident_bytes else ""
            message = (f"kernel {est.kernel_name or est.instruction_name}: {what} {mib(cap.scoped_bytes)}{resident} "
                       f"exceeds the {mib(cap.capacity_bytes)} of VMEM on {tpu_label(est, kernel.tpu_assumed)}; "
                       f"XLA will report \"{cap.xla_message()}\"")
            data = estimate_json(est, kernel.tpu_assumed)
            data.update(used_bytes=cap.used_bytes, resident_bytes=cap.resident_bytes,
                        capacity_bytes=cap.capacity_bytes, xla_message=cap.xla_message(),
                        lower_bound=not cap.measured and est.figure_kind == "lower-bound")
            hint = hint_text(est)
            hint = "shrink the blocks (a larger vmem_limit_bytes cannot help)" + (
                f"; {hint.split('; ', 1)[-1]}" if hint and "shrink" in hint else "")
            yield self.finding(ctx, kernel.comp, kernel.inst, message, hint=hint, data=data)
