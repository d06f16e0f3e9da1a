"""HLO203: a Pallas block shape is not divisible by the operand's tiling (Mosaic error E2002)."""

from __future__ import annotations

from typing import Iterator

from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, register
from hloscan.checks.vmem import VMEM, context_kernels
from hloscan.checks.vmem.examples import EW_F32_BLOCK_400x300, EW_INT8_BLOCK_400x300, elementwise_module, fenced


@register
class MosaicBlockMisaligned(Check):
    __doc__ = f"""A Pallas block's last two dims neither divide by the operand's tiling nor equal the array dims.

    ## What it flags
    A `tpu_custom_call` window whose block shape, in its last two dimensions, is not a multiple of the
    operand's HBM tiling (e.g. (8, 128) for f32, (32, 128) for int8 arrays with rows divisible by 32)
    and is not the full array dimension either.

    ## Why it matters
    Mosaic rejects the kernel at compile time with E2002 ("block shape ... is not divisible by tiling
    evenly nor matches the full shape").

    ## Example
    An s8[1600,300] array has tiling (32,128); (400,300) blocks: 400 is not a multiple of 32:
    {fenced(elementwise_module("s8", EW_INT8_BLOCK_400x300))}

    ## Fix
    An f32[1600,300] array has tiling (8,128): 400 divides by 8 and 300 is the full dim:
    {fenced(elementwise_module("f32", EW_F32_BLOCK_400x300))}

    ## References
    https://openxla.org/xla/errors/error_2002
    """

    code = "HLO203"
    name = "mosaic-block-misaligned"
    severity = Severity.ERROR
    xla_error = "E2002"
    family = VMEM

    def run(self, ctx) -> Iterator[Finding]:
        for kernel in context_kernels(ctx, self):
            for text in kernel.estimate.misaligned:
                yield self.finding(ctx, kernel.comp, kernel.inst,
                                   f"kernel {kernel.estimate.kernel_name or kernel.inst.name}: {text}",
                                   hint="use block dims that are multiples of the tiling, or the full dims")
