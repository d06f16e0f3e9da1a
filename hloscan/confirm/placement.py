"""Where a kernel's operands and results live (HBM, VMEM, ...) in the whole program and when it is compiled
alone (`vmem --exact`), and what that does to its scoped-VMEM figure.

A Pallas kernel gets no scoped-VMEM window for an operand or result that XLA's memory-space assignment put
whole in VMEM (S(1)): the whole program and the kernel alone differ exactly when that placement differs.
Measured on tpu-oracle/real (the 82 compiled kernels): the alone figure moved by the windows hloscan's
estimator counts for the operands and results placed differently equals the whole-program figure for 81.

The minimal module cannot be given the whole program's placement instead: the HLO->MLIR conversion that
libtpu's compile-only client needs refuses it ("UNIMPLEMENTED: Layout support for non-default memory space
is not yet implemented"; with tiles: "Tiled layout is not supported yet"). So the alone figure is reported
as compiled, and beside it the placement difference and the figure moved to the whole program's placement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from hloscan.analyses.vmem.estimate import estimate_kernel
from hloscan.analyses.vmem.residency import in_memory_space
from hloscan.hlo.ir import Shape

HBM = 0
_SPACE_NAMES = {0: "HBM", 1: "VMEM (S(1))"}


@dataclass(frozen=True)
class Placement:
    """The memory space of each operand and each result leaf of one kernel (0: HBM, 1: VMEM, ...)."""

    operands: tuple[int, ...]
    results: tuple[int, ...]

    @classmethod
    def of(cls, operands: Sequence[Shape | None], result: Shape | None) -> "Placement":
        return cls(tuple(s.memory_space if s is not None else HBM for s in operands),
                   tuple(leaf.memory_space for leaf in result_leaves(result)))

    @classmethod
    def predicted(cls, operands: int, results: int, in_vmem: frozenset[int]) -> "Placement":
        """From hloscan's residency prediction: positions past the operands are result leaves."""
        return cls(tuple(1 if i in in_vmem else HBM for i in range(operands)),
                   tuple(1 if operands + i in in_vmem else HBM for i in range(results)))


def result_leaves(result: Shape | None) -> list[Shape]:
    return [] if result is None else [leaf for _, leaf in result.leaves()]


def differences(whole: Placement, alone: Placement) -> list[str]:
    """What the whole program placed otherwise than the kernel alone, one phrase per kind of move:
    "operands 0, 1, 2 were in VMEM (S(1)) in the whole program, in HBM alone"."""
    out = []
    for what, there, here in (("operand", whole.operands, alone.operands), ("result", whole.results, alone.results)):
        moves: dict[tuple[int, int], list[int]] = {}
        for i, (w, a) in enumerate(zip(there, here)):
            if w != a:
                moves.setdefault((w, a), []).append(i)
        for (w, a), positions in sorted(moves.items()):
            numbers = f"{what}{'s' if len(positions) > 1 else ''} {', '.join(map(str, positions))}"
            verb = "were" if len(positions) > 1 else "was"
            out.append(f"{numbers} {verb} in {_space(w)} in the whole program, in {_space(a)} alone")
    return out


def _space(number: int) -> str:
    return _SPACE_NAMES.get(number, f"memory space S({number})")


def moved_figure(alone_bytes: int, backend_config: str | None, operands: Sequence[Shape | None],
                 result: Shape | None, whole: Placement, alone: Placement, tpu: str) -> int:
    """The alone figure moved to the whole program's placement: plus the windows hloscan's estimator counts
    with the whole program's placement, minus those it counts with the alone one (same shapes and body, so
    only the placed-differently operands and results count)."""
    def windows(placement: Placement) -> int:
        ops, res = placed(operands, result, placement)
        return estimate_kernel(backend_config, ops, res, tpu=tpu).predicted_bytes

    return alone_bytes + windows(whole) - windows(alone)


def placed(operands: Sequence[Shape | None], result: Shape | None,
           placement: Placement) -> tuple[list[Shape | None], list[Shape]]:
    """The kernel's operand and result-leaf shapes with the memory spaces of `placement`."""
    ops = [_in_space(s, space) for s, space in zip(operands, placement.operands)]
    return ops, [_in_space(leaf, space) for leaf, space in zip(result_leaves(result), placement.results)]


def _in_space(shape: Shape | None, space: int) -> Shape | None:
    return in_memory_space(shape, space) if shape is not None and shape.is_array else shape
