"""Pausing Python's cyclic garbage collector while big acyclic structures (IR, graphs) are built."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

# One-shot processes (the CLI, the benchmark) set this: after a parse, what was built is moved out of
# the collector's sight (gc.freeze) instead of being walked again by the next collections (a full
# second on a 48 MB dump). Long-lived processes leave it off, since frozen garbage cycles (networkx's
# cached views) would never be collected.
FREEZE_AFTER_BUILD = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building big acyclic structures: it otherwise rescans the growing IR
    again and again, which doubled the time to parse a 48 MB dump."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if FREEZE_AFTER_BUILD:
                gc.freeze()
            elif gc.get_freeze_count() == 0:
                _promote_to_oldest_generation()
            gc.enable()


def _promote_to_oldest_generation() -> None:
    """Move what was just built straight into the oldest GC generation.

    Left in the youngest one, the next allocation would trigger a collection that walks all of it, and
    the next one again (a second on a 48 MB dump plus its graph). freeze() + unfreeze() moves every tracked
    object to the oldest generation without walking it, so only a later full collection looks at it, as
    for any long-lived data; nothing stays frozen (callers that froze objects themselves are left alone).
    """
    gc.freeze()
    gc.unfreeze()
