"""Allowances for compiler-internal VMEM, and how far the compiler's own figures fell from them.

Mosaic allocates some scoped VMEM itself: register-allocator spill slots, matmul accumulators,
relayouts. No window or scratch operand shows it, so the estimate adds an *allowance* from an empirical
rule (compiler_scratch.py, scores_scratch.py, estimate.py). Each rule states its `Spread`: the compiler's
internal scratch + spill for that kernel, divided by the allowance, over the kernels measured with the
compiler's allocation lists (fixtures/oracle_new/*/LLO_BREAKDOWN.tsv: jax's bundled kernels and the user-written
and library kernels of user1..user7). tests/analyses/vmem/test_allowance_spread.py measures them again and fails
when a stated spread no longer holds.

The spread is the central 95%, not 90%: a range is judged by how often it holds the compiler's figure (19 in 20
is the aim), and spreads measured on jax's bundled kernels alone (real .. real7, central 90%) held the figure
of 466 of 515 user-written kernels (90%) while they held 286 of 302 bundled ones.

With its spread an allowance gives the estimate a range (`KernelEstimate.range_bytes`): the windows and
scratch plus the allowance times the spread's ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Spread:
    """The compiler's figure / the allowance: `low`..`high` for 19 in 20 of `kernels` measured kernels
    (the central 95%, by nearest rank). `high` None: no upper figure was measured (a lower bound)."""

    low: float
    high: float | None
    kernels: int = 0

    def text(self) -> str:
        if self.high is None:
            return "a lower bound: no upper figure measured"
        share = "19 in 20 of" if _tail(self.kernels) else "all"
        return f"the compiler used {self.low:g}-{self.high:g}x this in {share} {self.kernels} measured kernels"


EXACT = Spread(1.0, 1.0)
LOWER_BOUND = Spread(1.0, None)


@dataclass(frozen=True)
class Allowance:
    """`size` bytes of compiler-internal scratch that rule `rule` expects, why, and its measured spread."""

    rule: str
    size: int
    why: str
    spread: Spread

    @property
    def note(self) -> str:
        spread = "" if self.spread == EXACT else f"; {self.spread.text()}"
        return f"{self.why}{spread}: {self.size} bytes"

    @property
    def low(self) -> int:
        return int(self.size * self.spread.low)

    @property
    def high(self) -> int | None:
        return None if self.spread.high is None else math.ceil(self.size * self.spread.high)


def total_range(exact: int, allowances: Iterable[Allowance]) -> tuple[int, int | None]:
    """The estimate's range: the windows and scratch (`exact`) plus each allowance at its spread's ends."""
    low, high = exact, exact
    for a in allowances:
        low += a.low
        high = None if high is None or a.high is None else high + a.high
    return low, high


def measured_spread(ratios: list[float]) -> tuple[float, float]:
    """The central 95% of `ratios` (nearest rank): what `Spread` states, as measured."""
    ordered = sorted(ratios)
    cut = _tail(len(ordered))
    return ordered[cut], ordered[len(ordered) - 1 - cut]


def _tail(kernels: int) -> int:
    """How many kernels fall outside the 19 in 20 at each end (none of fewer than 40)."""
    return math.floor(kernels * 0.025)
