"""HLO401: the program's HBM total exceeds the TPU's capacity (XLA error E1000)."""

from __future__ import annotations

from typing import Iterator

from hloscan.analyses.hbm import human
from hloscan.analyses.hbm.capacity import TIGHT_MARGIN, verdict
from hloscan.checks.hbm import HBM, context_result, figure_text, hbm_finding
from hloscan.checks.hbm.examples import hbm_module
from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, register


@register
class HbmOutOfMemory(Check):
    __doc__ = f"""The program needs more HBM than the TPU has: XLA fails with E1000 "Ran out of memory on HBM".

    ## What it flags
    A module whose HBM total (arguments + own outputs + temporaries at the peak + constants, the figure XLA's
    message calls "total memory required for HLO temporaries") exceeds the generation's available HBM
    (15.75G v5e, 31.25G v6e, 94.75G v7x, 15.25G v4, 95.74G v5p). With XLA's memory-usage-report.txt beside
    the dump the figure is exact; a scheduled dump is simulated (about 10%); a pre-optimisation dump is
    predicted (an estimate: within 4% for nine in ten programs near capacity, 25% per device for sharded
    modules before partitioning). Over capacity by less than that error it is HLO402's warning instead.

    ## Why it matters
    The compile fails after the whole program has been traced and optimised; on a real job that is minutes lost.

    ## Example
    A 16 GiB argument and a 16 GiB temporary on v5e (32G > 15.75G):
    {hbm_module(4096, "v5e")}

    ## Fix
    A quarter of the rows (8G, 51% of v5e's HBM); in a real program: donate the arguments the outputs replace, checkpoint (rematerialise) or offload to host the activations
    live at the peak, shard parameters and optimizer state, or shrink the batch. The finding lists the
    largest buffers live at the peak with their Python lines.
    {hbm_module(1024, "v5e")}

    ## Options
    `tpu` comes from `--tpu` (default v5e, assumed).

    ## References
    https://openxla.org/xla/errors/error_1000
    """

    code = "HLO401"
    name = "hbm-out-of-memory"
    severity = Severity.ERROR
    xla_error = "E1000"
    family = HBM
    stage = "after_optimizations"

    def run(self, ctx) -> Iterator[Finding]:
        r = context_result(ctx, self)
        if r is not None and verdict(r.xla_total_bytes, r.capacity_bytes) == "E1000" and r.certainly_over:
            yield hbm_finding(self, ctx, r, f"{figure_text(r)}: over by {human(r.over_bytes)} (XLA E1000)")
