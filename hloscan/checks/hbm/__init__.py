"""HLO4xx: HBM use against the TPU's capacity (XLA error E1000), one rule per file. The analysis is
hloscan.analyses.hbm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hloscan.analyses.hbm import HbmResult, analyze_modules, compiled_for_another_backend, human
from hloscan.analyses.hbm.hints import fix_hints
from hloscan.analyses.hbm.reports import report_files
from hloscan.checks.options import TPU
from hloscan.lint.finding import TRACE_KEY, Finding
from hloscan.lint.registry import Family, register_family

if TYPE_CHECKING:
    from hloscan.lint.context import Context
    from hloscan.lint.registry import Check

HBM = register_family(Family(prefix="HLO4", name="hbm", title="HBM use against capacity", xla_errors=("E1000",),
                             options={"tpu": TPU}, side_files=report_files))


def context_result(ctx: "Context", check: "type[Check] | Check") -> HbmResult | None:
    """The module's HBM figures for the run's TPU, memoised so HLO401 and HLO402 compute them once; None for
    a module compiled for CPU or GPU, to which no TPU's HBM applies."""
    if compiled_for_another_backend(ctx.module):
        return None
    tpu = ctx.option(check, "tpu")
    return ctx.memo(("hbm", tpu), lambda: analyze_modules([ctx.module], ctx.path, tpu)[0])


def figure_text(r: HbmResult) -> str:
    kind = {"exact": "XLA's report", "simulated": f"simulated peak, ~{r.expected_error:.0%}",
            "predicted": f"predicted, an estimate within ~{r.expected_error:.0%}"}[r.kind]
    if r.devices > 1:
        kind += f", per device of {r.devices}"
    gen = r.generation + (" (assumed; use --tpu)" if r.generation_assumed else "")
    return (f"HBM total {human(r.xla_total_bytes)} ({kind}: arguments {human(r.arguments_bytes)}, "
            f"temporaries {human(r.temporaries_bytes)}) vs {human(r.capacity_bytes)} available on {gen}")


def hbm_finding(check: "Check", ctx: "Context", r: HbmResult, message: str) -> Finding:
    inst = comp = None
    if r.peak_instruction:
        for c, i in ctx.module.instructions():
            if i.name == r.peak_instruction:
                comp, inst = c, i
                break
    hint = "; ".join(fix_hints(r))
    data = r.to_json()
    data["dump"] = data.pop("path")
    assert TRACE_KEY not in data  # the framework reads TRACE_KEY as a path of instructions, not a file
    return check.finding(ctx, comp, inst, message, hint=hint, data=data)
