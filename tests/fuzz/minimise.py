"""Delta-debugging minimiser: shrinks a failing input by lines, then by byte chunks, keeping the failure."""

from __future__ import annotations

from typing import Callable


def _shrink(parts: list[bytes], joiner: bytes, still_fails: Callable[[bytes], bool], budget: list[int]) -> list[bytes]:
    chunk = max(1, len(parts) // 2)
    while chunk >= 1 and budget[0] > 0:
        i, changed = 0, False
        while i < len(parts) and budget[0] > 0:
            candidate = parts[:i] + parts[i + chunk :]
            budget[0] -= 1
            if candidate and still_fails(joiner.join(candidate)):
                parts, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return parts


def minimise(data: bytes, still_fails: Callable[[bytes], bool], max_tries: int = 400) -> bytes:
    """The smallest input found (within max_tries runs) for which still_fails is true."""
    budget = [max_tries]
    lines = _shrink(data.split(b"\n"), b"\n", still_fails, budget)
    data = b"\n".join(lines)
    size = max(1, len(data) // 16)
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join(_shrink(chunks, b"", still_fails, budget))
