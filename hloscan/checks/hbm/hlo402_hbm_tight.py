"""HLO402: the program fits in HBM with less than the margin to spare (a warning near E1000)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from hloscan.analyses.hbm.capacity import TIGHT_MARGIN, verdict
from hloscan.checks.hbm import HBM, context_result, figure_text, hbm_finding
from hloscan.checks.hbm.examples import hbm_module
from hloscan.lint.finding import Finding, Severity
from hloscan.lint.registry import Check, Option, register


@register
class HbmTight(Check):
    __doc__ = f"""The program fits in HBM with less than the margin (10%) to spare.

    ## What it flags
    A module whose HBM total is within `margin` of the generation's available HBM. A simulated or predicted
    figure has an error of about 10% / 25%, so such a program may already fail with E1000.

    ## Why it matters
    A small change (batch, sequence length, a jax upgrade) turns it into "Ran out of memory on HBM".

    ## Example
    15 GiB argument + 15 GiB temporary on v6e: 30G of 31.25G (96%):
    {hbm_module(3840, "v6e")}

    ## Fix
    Same levers as HLO401 (donation, remat/offload of the activations live at the peak, sharding, smaller
    batch); here 3072 rows, 24G (77%):
    {hbm_module(3072, "v6e")}

    ## Options
    `margin` (default 0.10): the share of capacity that must stay free. `tpu` comes from `--tpu`.
    """

    code = "HLO402"
    name = "hbm-tight"
    severity = Severity.WARNING
    family = HBM
    options = {"margin": Option(float, TIGHT_MARGIN, "Share of HBM capacity that must stay free.")}
    stage = "after_optimizations"

    def run(self, ctx) -> Iterator[Finding]:
        r = context_result(ctx, self)
        if r is None:
            return
        state = verdict(r.xla_total_bytes, r.capacity_bytes, ctx.option(self, "margin"))
        share = r.xla_total_bytes / r.capacity_bytes
        if state == "E1000" and not r.certainly_over:
            # Over capacity by less than the estimate's own error: XLA may or may not fail.
            yield hbm_finding(self, ctx, r, f"{figure_text(r)}: {share:.0%} of capacity, over it by less than "
                                            f"the estimate's expected error ({r.expected_error:.0%}): it may fail "
                                            "with E1000")
            return
        if state != "tight":
            return
        finding = hbm_finding(self, ctx, r, f"{figure_text(r)}: {share:.0%} of capacity, under the margin")
        if r.kind == "exact" and self.code not in ctx.severities:
            # XLA's own figure and it fits: the program compiled, so the thin margin is a note, not a warning
            # (a simulated or predicted figure carries an error that may put it over capacity).
            finding = replace(finding, severity=Severity.NOTE)
        yield finding
