"""HLO1xx: host offload (XLA error E1200), one rule per file. The analysis is hloscan.analyses.host_offload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hloscan.analyses.host_offload.walk import HostOffloadAnalysis, analyze
from hloscan.lint.registry import Family, Option, register_family

if TYPE_CHECKING:
    from hloscan.lint.context import Context
    from hloscan.lint.registry import Check

HOST_OFFLOAD = register_family(Family(
    prefix="HLO1",
    name="host-offload",
    title="Host offload",
    xla_errors=("E1200",),
    options={
        "host_outputs": Option(tuple, None, "Comma-separated entry output indices that are declared in host memory "
                                            "(for jax `lowered.as_text()`, which carries no output memory kinds).",
                               item_type=int, metavar="0,2"),
    },
))


def context_analysis(ctx: "Context", check: "type[Check] | Check") -> HostOffloadAnalysis:
    """The host-offload walks of the module for the run's `host_outputs`, memoised so HLO101 and HLO102
    replay them once."""
    host_outputs = ctx.option(check, "host_outputs")
    key = None if host_outputs is None else tuple(sorted(host_outputs))
    return ctx.memo(("host_offload", key), lambda: analyze(ctx.module, key))
