"""How much HBM a set of temporaries takes once placed at fixed offsets, as XLA's heap simulator places them.

The peak of live bytes is a lower bound: XLA gives every temporary one offset for its whole life, so a
buffer that outlives its neighbours leaves a hole that a later, larger buffer cannot use. XLA:TPU's
temporaries heap is packed by decreasing size, each buffer taking the best-fitting (smallest sufficient)
gap among the buffers whose lives overlap its own (GlobalDecreasingSizeBestFitHeap, spatial order); the
heap is the highest end. Measured on the sharded train steps of fixtures/oracle_new: an optimizer update
streaming state from host left 5-15% of holes that the live peak missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# Past this many buffers, packing (quadratic in the number of buffers) costs more than its precision is
# worth; the live peak is used instead (it is a lower bound of the packed heap).
MAX_PACKED_BUFFERS = 4000


@dataclass(frozen=True)
class Interval:
    """One temporary: its bytes and the positions of its first and last use, inclusive."""

    start: int
    end: int
    size: int


def packed_heap_bytes(intervals: Iterable[Interval]) -> int | None:
    """The heap size once every interval is placed; None past MAX_PACKED_BUFFERS."""
    items = [i for i in intervals if i.size > 0]
    if len(items) > MAX_PACKED_BUFFERS:
        return None
    items.sort(key=lambda i: (-i.size, -(i.end - i.start), i.start))
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, offset + size)
    top = 0
    for item in items:
        offset = _best_fit(item, placed)
        placed.append((item.start, item.end, offset, offset + item.size))
        top = max(top, offset + item.size)
    return top


def _best_fit(item: Interval, placed: list[tuple[int, int, int, int]]) -> int:
    """The start of the smallest gap that holds `item` among the chunks live with it, else above them all."""
    busy = sorted((lo, hi) for start, end, lo, hi in placed if start <= item.end and item.start <= end)
    best_offset, best_gap = None, None
    cursor = 0
    for lo, hi in busy:
        gap = lo - cursor
        if gap >= item.size and (best_gap is None or gap < best_gap):
            best_offset, best_gap = cursor, gap
        cursor = max(cursor, hi)
    return cursor if best_offset is None else best_offset
