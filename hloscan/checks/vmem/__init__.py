"""HLO2xx: scoped and whole VMEM of Pallas/Mosaic kernels (XLA errors E1001, E2002), one rule per file.
The analysis is hloscan.analyses.vmem."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hloscan.analyses.vmem.estimate import DEFAULT_MARGIN
from hloscan.analyses.vmem.kernels import Kernel, estimate_module
from hloscan.checks.options import TPU
from hloscan.lint.registry import Family, Option, register_family

if TYPE_CHECKING:
    from hloscan.lint.context import Context
    from hloscan.lint.registry import Check

VMEM = register_family(Family(
    prefix="HLO2",
    name="memory",
    title="Scoped and whole VMEM of kernels",
    xla_errors=("E1001", "E2002"),
    options={
        "tpu": TPU,
        "vmem_limit_kib": Option(int, None, "Scoped Vmem limit in KiB, as --xla_tpu_scoped_vmem_limit_kib.",
                                 minimum=1, metavar="KIB"),
    },
))


def context_kernels(ctx: "Context", check: "type[Check] | Check", margin: float = DEFAULT_MARGIN) -> list[Kernel]:
    """estimate_module for the run's settings, memoised on the Context so the family's checks estimate once."""
    tpu, limit = ctx.option(check, "tpu"), ctx.option(check, "vmem_limit_kib")
    return ctx.memo(("vmem", tpu, limit, margin), lambda: estimate_module(ctx.module, tpu, limit, margin))
