"""Temporaries XLA places in an argument's or an output's buffer while that buffer holds nothing.

XLA's buffer assignment gives every donated argument (a parameter aliased to an output: jax
`donate_argnums`, the parameters and optimizer state of a train step) and every program output an allocation
of its own, and tries those allocations for each other value, largest value first, the smallest allocation
that holds it, before it opens the temporaries heap. A value may share an allocation when its live range
meets none of the values already there, and a copy never shares its operand's allocation. So a donated
argument's buffer takes other values between the parameter's last read and the write of the output that
aliases it, and an output's buffer before the output is written. Measured: in a ZeRO train step
(fixtures/oracle_new/sharded3, mistral_zero_L8 on v6e) allocation 3 (parameter 6, f32[8,14336,4096]) held
param.16, then `copy.349` (a relayout copy of another parameter, same size), then the updated parameter
`copy.336`; the temporaries heap was 10.56G where counting every temporary in it gave 15.04G.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Host:
    """An argument or output buffer: its bytes, the position ranges where its own values live, the values
    (ids) that are its own, and the temporaries placed in it so far."""

    bytes: int
    busy: list[tuple[int, int]]
    members: frozenset[int]
    guests: list[tuple[int, int]] = field(default_factory=list)

    def takes(self, start: int, end: int, size: int) -> bool:
        return size <= self.bytes and all(end < s or e < start for s, e in self.busy + self.guests)


@dataclass(frozen=True)
class Temp:
    """A temporary: its live range (inclusive), bytes, and the value ids a copy in it reads (a copy does not
    share its operand's allocation)."""

    start: int
    end: int
    bytes: int
    copies_from: frozenset[int] = frozenset()


def placed_in_hosts(temps: list[Temp], hosts: list[Host]) -> set[int]:
    """Indices of `temps` that XLA would place in `hosts`: largest first, each in the smallest host buffer
    that holds it whose own values and guests its life does not meet."""
    by_size = sorted(range(len(hosts)), key=lambda h: hosts[h].bytes)
    chosen = set()
    for i in sorted(range(len(temps)), key=lambda i: (-temps[i].bytes, temps[i].start)):
        t = temps[i]
        for h in by_size:
            host = hosts[h]
            if host.takes(t.start, t.end, t.bytes) and not (t.copies_from & host.members):
                host.guests.append((t.start, t.end))
                chosen.add(i)
                break
    return chosen
