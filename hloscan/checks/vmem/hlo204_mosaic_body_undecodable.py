"""HLO204: a tpu_custom_call's kernel body could not be decoded, so VMEM is sized from whole arrays."""

from __future__ import annotations

from typing import Iterator

from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, register
from hloscan.analyses.vmem.kernels import mib
from hloscan.checks.vmem import VMEM, context_kernels
from hloscan.checks.vmem.examples import EW_F32_BLOCK_400x300, elementwise_module, fenced


@register
class MosaicBodyUndecodable(Check):
    __doc__ = f"""A `tpu_custom_call`'s Mosaic kernel body could not be decoded.

    ## What it flags
    A Pallas/Mosaic custom call whose `backend_config` is not JSON, has no `custom_call_config.body`,
    or whose serialized MLIR bytecode this version of hloscan cannot read (a newer bytecode version).

    ## Why it matters
    Without the body the block shapes, grid and scratch buffers are unknown, so the VMEM checks fall
    back to treating every operand and result as one whole-array VMEM block; HLO201/HLO202 findings
    on this kernel are then rough.

    ## Example
    The body is not MLIR bytecode:
    {fenced(elementwise_module("f32", "bm90IGJ5dGVjb2Rl"))}

    ## Fix
    The dump as jax wrote it, with the untouched serialized kernel body:
    {fenced(elementwise_module("f32", EW_F32_BLOCK_400x300))}
    """

    code = "HLO204"
    name = "mosaic-body-undecodable"
    severity = Severity.NOTE
    family = VMEM

    def run(self, ctx) -> Iterator[Finding]:
        for kernel in context_kernels(ctx, self):
            est = kernel.estimate
            if est.decode_error is None:
                continue
            message = (f"{est.decode_error}; VMEM estimated from whole arrays: {mib(est.estimate_bytes)}"
                       if est.kind == "whole-array" else est.decode_error)
            yield self.finding(ctx, kernel.comp, kernel.inst, message,
                               data={"decode_error": est.decode_error, "kind": est.kind})
