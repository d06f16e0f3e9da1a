"""HLO401/HLO402: the program's HBM total exceeds (or nearly reaches) the TPU's capacity (XLA error E1000)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Iterator

from ..analyses.hbm import GENERATIONS, HbmResult, analyze_modules, human
from ..analyses.hbm.capacity import TIGHT_MARGIN, verdict
from ..analyses.hbm.hints import fix_hints
from ..finding import Finding, Severity
from ..registry import Check, Option, register

if TYPE_CHECKING:
    from ..context import Context

_OPTIONS: dict[str, Option] = {
    "tpu": Option(str, None, "TPU generation (default: v5e, assumed).", tuple(GENERATIONS)),
    "margin": Option(float, TIGHT_MARGIN, "Share of HBM capacity that must stay free (HLO402)."),
}

def _module(rows: int, tpu: str) -> str:
    """A scheduled module with an f32[rows, 1M] argument and a temporary of the same size (rows x 4 MiB each)."""
    text = f"""```hlo tpu="{tpu}"
HloModule big, is_scheduled=true, entry_computation_layout={{(f32[{rows},1048576]{{1,0:T(8,128)}})->f32[]{{:T(128)}}}}

%add (l: f32[], r: f32[]) -> f32[] {{
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %s = f32[] add(%l, %r)
}}

ENTRY %main (p: f32[{rows},1048576]) -> f32[] {{
  %p = f32[{rows},1048576]{{1,0:T(8,128)}} parameter(0)
  %e = f32[{rows},1048576]{{1,0:T(8,128)}} exponential(%p)
  %z = f32[]{{:T(128)}} constant(0)
  ROOT %red = f32[]{{:T(128)}} reduce(%e, %z), dimensions={{0,1}}, to_apply=%add
}}
```"""
    # Indented so inspect.cleandoc strips the docstring's 4 spaces evenly.
    return textwrap.indent(text, "    ").lstrip()


def _results(ctx: "Context", check: "type[Check] | Check") -> list[tuple[HbmResult, str]]:
    """The module's HBM figures for --tpu, computed once per Context for both checks."""
    tpu = ctx.option(check, "tpu")
    cache: dict[Any, HbmResult] = ctx.__dict__.setdefault("_hbm_results", {})
    if tpu not in cache:
        cache[tpu] = analyze_modules([ctx.module], ctx.path, tpu)[0]
    return [(cache[tpu], verdict(cache[tpu].xla_total_bytes, cache[tpu].capacity_bytes, ctx.option(check, "margin")))]


def _figure(r: HbmResult) -> str:
    kind = {"exact": "XLA's report", "simulated": "simulated peak", "predicted": "predicted (estimate, ~25%)"}[r.kind]
    gen = r.generation + (" (assumed; use --tpu)" if r.generation_assumed else "")
    return (f"HBM total {human(r.xla_total_bytes)} ({kind}: arguments {human(r.arguments_bytes)}, "
            f"temporaries {human(r.temporaries_bytes)}) vs {human(r.capacity_bytes)} available on {gen}")


def _finding(check: Check, ctx: "Context", r: HbmResult, message: str) -> Finding:
    inst = comp = None
    if r.peak_instruction:
        for c, i in ctx.module.instructions():
            if i.name == r.peak_instruction:
                comp, inst = c, i
                break
    hint = "; ".join(fix_hints(r))
    data = r.to_json()
    data["dump"] = data.pop("path")  # `path` in finding data means a dataflow path to `hloscan graph`
    return check.finding(ctx, comp, inst, message, hint=hint, data=data)


@register
class HbmOutOfMemory(Check):
    __doc__ = f"""The program needs more HBM than the TPU has: XLA fails with E1000 "Ran out of memory on HBM".

    ## What it flags
    A module whose HBM total (arguments + own outputs + temporaries at the peak + constants, the figure XLA's
    message calls "total memory required for HLO temporaries") exceeds the generation's available HBM
    (15.75G v5e, 31.25G v6e, 94.75G v7x, 15.25G v4, 95.74G v5p). With XLA's memory-usage-report.txt beside
    the dump the figure is exact; a scheduled dump is simulated (about 10%); a pre-optimisation dump is
    predicted (an estimate, about 25%).

    ## Why it matters
    The compile fails after the whole program has been traced and optimised; on a real job that is minutes lost.

    ## Example
    A 16 GiB argument and a 16 GiB temporary on v5e (32G > 15.75G):
    {_module(4096, "v5e")}

    ## Fix
    A quarter of the rows (8G, 51% of v5e's HBM); in a real program: donate the arguments the outputs replace, checkpoint (rematerialise) or offload to host the activations
    live at the peak, shard parameters and optimizer state, or shrink the batch. The finding lists the
    largest buffers live at the peak with their Python lines.
    {_module(1024, "v5e")}

    ## Options
    `tpu` comes from `--tpu` (default v5e, assumed).

    ## References
    https://openxla.org/xla/errors/error_1000
    """

    code = "HLO401"
    name = "hbm-out-of-memory"
    severity = Severity.ERROR
    xla_error = "E1000"
    options = dict(_OPTIONS)
    stage = "after_optimizations"

    def run(self, ctx) -> Iterator[Finding]:
        for r, state in _results(ctx, self):
            if state == "E1000":
                yield _finding(self, ctx, r, f"{_figure(r)}: over by {human(r.over_bytes)} (XLA E1000)")


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
    {_module(3840, "v6e")}

    ## Fix
    Same levers as HLO401 (donation, remat/offload of the activations live at the peak, sharding, smaller
    batch); here 3072 rows, 24G (77%):
    {_module(3072, "v6e")}

    ## Options
    `margin` (default 0.10): the share of capacity that must stay free. `tpu` comes from `--tpu`.
    """

    code = "HLO402"
    name = "hbm-tight"
    severity = Severity.WARNING
    options = dict(_OPTIONS)
    stage = "after_optimizations"

    def run(self, ctx) -> Iterator[Finding]:
        for r, state in _results(ctx, self):
            if state == "tight":
                share = r.xla_total_bytes / r.capacity_bytes
                yield _finding(self, ctx, r, f"{_figure(r)}: {share:.0%} of capacity, under the margin")
