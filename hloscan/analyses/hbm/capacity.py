"""HBM capacity per TPU generation, as XLA reports it available in its E1000 message ("available HBM (15.75G)").

The figures are what the compiler quotes, not the marketing size: XLA keeps some HBM for itself. v5e, v6e,
v7x and v4 are the values the issue measured with the compile-only recipe; v5p was measured the same way
(1 TiB output program, jax 0.10.2, libtpu 0.0.42.1: "available HBM (95.74G)"). G here is GiB, as in XLA's messages.
"""

from __future__ import annotations

from hloscan.analyses.tpu import DEFAULT_TPU as DEFAULT_GENERATION
from hloscan.analyses.tpu import GENERATIONS as _TPUS
from hloscan.analyses.tpu import GIB, generation

# Generation -> available HBM bytes for one program (the one table is hloscan.analyses.tpu).
CAPACITY_BYTES: dict[str, int] = {name: gen.hbm_capacity for name, gen in _TPUS.items()}
# A program within this share of capacity is "tight": the next dtype or batch change breaks it.
TIGHT_MARGIN = 0.10


def capacity_bytes(tpu: str | None) -> int:
    return generation(tpu or DEFAULT_GENERATION).hbm_capacity


def verdict(total_bytes: int, capacity: int, margin: float = TIGHT_MARGIN) -> str:
    """E1000 when over capacity, tight when within the margin of it, else ok."""
    if total_bytes > capacity:
        return "E1000"
    if total_bytes > capacity * (1 - margin):
        return "tight"
    return "ok"


def human(n: float) -> str:
    """Bytes in XLA's own units (G = GiB, M = MiB), as its messages print them."""
    for unit, size in (("G", GIB), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f}{unit}"
    return f"{int(n)}B"
