"""HLO202: a Pallas/Mosaic kernel's scoped VMEM is within the margin of its limit."""

from __future__ import annotations

from typing import Iterator

from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, Option, register
from hloscan.analyses.tpu import MIB
from hloscan.analyses.vmem.estimate import DEFAULT_MARGIN
from hloscan.analyses.vmem.kernels import (estimate_json, figure_label, hint_text,
                           limit_label, mib)
from hloscan.checks.vmem import VMEM, context_kernels
from hloscan.checks.vmem.examples import fenced, matmul_module


@register
class ScopedVmemTight(Check):
    __doc__ = f"""A `tpu_custom_call` kernel's scoped VMEM leaves less headroom than the margin.

    ## What it flags
    A Pallas/Mosaic kernel that fits its scoped VMEM limit, but with less than `margin` (10%) to spare.
    An estimate's compiler-internal scratch is an allowance that scatters (the finding gives the measured
    range), or is left out where no allowance applies, so such a kernel may well hit E1001. A measured figure (`used_scoped_memory_configs` in after_codegen) under the limit is
    the compiler's own verdict that the kernel fits, so it is not flagged.

    ## Why it matters
    E1001 appears only when the program is compiled for the TPU; a kernel at the edge fails on a
    small change (another dtype, a jax upgrade that adds internal scratch).

    ## Example
    18 MiB of blocks under vmem_limit_bytes=19 MiB: 5% headroom:
    {fenced(matmul_module(vmem_limit_bytes=19 * MIB))}

    ## Fix
    Vmem_limit_bytes=20 MiB leaves the 10% margin:
    {fenced(matmul_module(vmem_limit_bytes=20 * MIB))}

    ## Options
    `margin` (default 0.10): the share of the limit that must stay free. `tpu` and `vmem_limit_kib`
    come from `--tpu` and `--vmem-limit-kib`.
    """

    code = "HLO202"
    name = "scoped-vmem-tight"
    severity = Severity.WARNING
    family = VMEM
    options = {"margin": Option(float, DEFAULT_MARGIN, "Share of the limit that must stay free.")}
    stage = "after_codegen"

    def run(self, ctx) -> Iterator[Finding]:
        for kernel in context_kernels(ctx, self, ctx.option(self, "margin")):
            est = kernel.estimate
            if est.verdict != "tight" or est.kind == "measured":
                # A measured figure under the limit is the compiler's own verdict that the kernel fits:
                # the margin is for the uncertainty of an estimate, which a measurement does not have.
                continue
            message = (f"kernel {est.kernel_name or est.instruction_name}: {figure_label(est)} "
                       f"{mib(est.estimate_bytes)} leaves {mib(est.headroom_bytes)} of the limit "
                       f"{mib(est.limit_bytes)} from {limit_label(est, kernel.tpu_assumed)} "
                       f"(under the {est.margin:.0%} margin)")
            yield self.finding(ctx, kernel.comp, kernel.inst, message, hint=hint_text(est),
                               data=estimate_json(est, kernel.tpu_assumed))
