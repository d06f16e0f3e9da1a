"""Whole-VMEM capacity: what XLA's "Ran out of memory in memory space vmem. Used X of Y vmem" compares.

That message is not the scoped-limit check (E1001): it fires when everything one kernel needs at once in
VMEM does not fit the chip's VMEM: the kernel's scoped region (windows, scratch, internal scratch) plus the
program VMEM that memory-space assignment placed there (whole operands in S(1)). It is what a kernel hits
when its `vmem_limit_bytes` is raised past physical VMEM, and on v4, which has no scoped check before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscan.analyses.vmem.estimate import KernelEstimate
from hloscan.analyses.vmem.tiling import dtype_bits, padded_bytes, vmem_sublane_tile

# The figure XLA prints for Y ("of 63.94M vmem" on v5p, "of 64.00M" on v7x, "of 128.00M" on v5e, "of 16.00M" v4).
_MESSAGE = "Ran out of memory in memory space vmem. Used {used} of {capacity} vmem"


@dataclass(frozen=True)
class Capacity:
    """One kernel's whole-VMEM figure against the chip's VMEM."""

    scoped_bytes: int  # the scoped figure (measured, or the estimate: a lower bound)
    resident_bytes: int  # whole operands already in VMEM (S(1)): program VMEM the kernel reads in place
    capacity_bytes: int
    measured: bool

    @property
    def used_bytes(self) -> int:
        return self.scoped_bytes + self.resident_bytes

    @property
    def exceeds(self) -> bool:
        return self.used_bytes > self.capacity_bytes

    def xla_message(self) -> str:
        """The message XLA prints, with sizes in its rounding (MiB, two decimals)."""
        return _MESSAGE.format(used=_xla_mib(self.used_bytes), capacity=_xla_mib(self.capacity_bytes))


def capacity(est: KernelEstimate) -> Capacity:
    resident = sum(_whole_bytes(b.full_shape or b.block_shape, b.dtype) for b in est.blocks
                   if b.note and "S(1)" in b.note)
    return Capacity(est.estimate_bytes, resident, est.physical_bytes, est.kind == "measured")


def _whole_bytes(shape, dtype: str) -> int:
    bits = dtype_bits(dtype)
    rows = shape[-2] if len(shape) >= 2 else 1
    return padded_bytes(shape, bits, vmem_sublane_tile(bits, rows), compact_columns=False)


def _xla_mib(n: int) -> str:
    return f"{n / (1024 * 1024):.2f}M"
