"""HLO201: a Pallas/Mosaic kernel's scoped VMEM exceeds the limit (XLA error E1001)."""

from __future__ import annotations

from typing import Iterator

from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, register
from hloscan.analyses.tpu import MIB
from hloscan.analyses.vmem.kernels import (estimate_json, figure_label, hint_text,
                           limit_label, mib, tpu_label)
from hloscan.checks.vmem import VMEM, context_kernels
from hloscan.checks.vmem.examples import fenced, matmul_module


@register
class ScopedVmemExceedsLimit(Check):
    __doc__ = f"""A `tpu_custom_call` kernel needs more scoped VMEM than its limit allows.

    ## What it flags
    A Pallas/Mosaic kernel whose blocks (double-buffered along the grid), scratch buffers and internal
    scratch add up to more than the scoped VMEM limit: the kernel's `vmem_limit_bytes`, else
    `--vmem-limit-kib`, else the generation's default (16 MiB on v4/v5e/v5p, 32 MiB on v6e/v7x).
    The figure is an estimate. Windows and scratch are counted as Mosaic lays them out; compiler-internal
    scratch (register spills, matmul and relayout scratch) by empirical allowances the finding names, each
    with the spread measured on the compiler's own allocation lists, so the finding gives the range where
    the compiler's figure is expected, and says when its low end would fit. Without an allowance, or with
    one whose upper figure was never measured, the estimate is a lower bound. Post-compilation dumps (`after_codegen`) carry the
    measured figure, but XLA writes them only for kernels that compiled, so they are never flagged. Without
    `--tpu`, v5e is assumed and the message says so.

    ## Why it matters
    XLA rejects the kernel at compile time with `E1001: Scoped allocation ... exceeded scoped vmem
    limit`, after tracing and lowering the whole program.

    ## Example
    Blocks (512,2048) (2048,512) (512,512) in f32, double-buffered: 18 MiB > 16 MiB (v5e default):
    {fenced(matmul_module())}

    ## Fix
    The same kernel with compiler_params vmem_limit_bytes=20 MiB (or halve bm: 13 MiB):
    {fenced(matmul_module(vmem_limit_bytes=20 * MIB))}

    ## Options
    `tpu` and `vmem_limit_kib` come from `--tpu` and `--vmem-limit-kib`.

    ## References
    https://openxla.org/xla/errors/error_1001
    """

    code = "HLO201"
    name = "scoped-vmem-exceeds-limit"
    severity = Severity.ERROR
    xla_error = "E1001"
    family = VMEM
    stage = "after_codegen"

    def run(self, ctx) -> Iterator[Finding]:
        for kernel in context_kernels(ctx, self):
            est = kernel.estimate
            if est.verdict != "E1001" or est.kind == "measured":
                # Above physical VMEM XLA reports a plain out-of-memory instead: HLO205. A measured figure
                # comes from after_codegen, which XLA writes only once the kernel compiled: the compiler's
                # own later stage accepted it (v7x kernels measured above their limit compile).
                continue
            finding = self.finding(ctx, kernel.comp, kernel.inst, _message(est, kernel.tpu_assumed),
                                   hint=hint_text(est), data=estimate_json(est, kernel.tpu_assumed))
            yield finding


def _low_end_fits(est) -> str:
    """Said when the verdict rests on the allowances: the low end of the estimate's range is under the limit."""
    if est.range_bytes is None or est.range_bytes[0] > est.limit_bytes:
        return ""
    return (f" (the low end of its range, {est.range_bytes[0] / MIB:.2f} MiB, would fit: the verdict rests on the "
            "allowance for compiler-internal scratch)")


def _message(est, assumed: bool) -> str:
    head = f"kernel {est.kernel_name or est.instruction_name}: {figure_label(est)} {mib(est.estimate_bytes)}"
    if est.verdict == "E1001":
        return (f"{head} exceeds the limit {mib(est.limit_bytes)} from {limit_label(est, assumed)}"
                + _low_end_fits(est))
    physical = mib(min(est.limit_bytes, est.physical_bytes))
    return f"{head} exceeds physical VMEM {physical} on {tpu_label(est, assumed)} (out of memory)"
