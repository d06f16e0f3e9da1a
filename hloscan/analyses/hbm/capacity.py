"""HBM capacity per TPU generation, as XLA reports it available in its E1000 message ("available HBM (15.75G)").

The figures are what the compiler quotes, not the marketing size: XLA keeps some HBM for itself. v5e, v6e,
v7x and v4 are the values the issue measured with the compile-only recipe; v5p was measured the same way
(1 TiB output program, jax 0.10.2, libtpu 0.0.42.1: "available HBM (95.74G)"). G here is GiB, as in XLA's messages.
"""

from __future__ import annotations

GIB = 1 << 30

# Generation -> available HBM bytes for one TensorCore's program.
CAPACITY_BYTES: dict[str, int] = {
    "v4": int(15.25 * GIB),
    "v5e": int(15.75 * GIB),
    "v5p": int(95.74 * GIB),  # measured: a 1 TiB program on v5p:2x2x1 reports "available HBM (95.74G)"
    "v6e": int(31.25 * GIB),
    "v7x": int(94.75 * GIB),
}
GENERATIONS = tuple(CAPACITY_BYTES)
DEFAULT_GENERATION = "v5e"
# A program within this share of capacity is "tight": the next dtype or batch change breaks it.
TIGHT_MARGIN = 0.10


def capacity_bytes(generation: str | None) -> int:
    return CAPACITY_BYTES[generation or DEFAULT_GENERATION]


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
