"""Scoped VMEM a kernel body takes itself (mosaic/body.py reads the facts): its allocations, sized with
Mosaic's tiling of them (the same on every generation measured), and the values it keeps across reductions.

The allocations are exact (the compiler's allocation list has one entry per `memref.alloca` the code uses,
of the tiled size); their peak over the `tpu.region` tree is what the figure holds. The held values are an
allowance: the register allocator spills them, and how much stays in the 64 vregs varies a little.
"""

from __future__ import annotations

from hloscan.analyses.vmem.allowance import Allowance, Spread
from hloscan.analyses.vmem.mosaic.body import Alloca, BodyFacts, HeldValue, Scope
from hloscan.analyses.vmem.tiling import LANES, VREG_FILE_BYTES, padded_bytes, vmem_sublane_tile

# (The compiler's figure - the exact part) / held-value peak over the single-kernel cases of
# fixtures/oracle_new/user1..user7 that get this allowance (tests/analyses/vmem/test_body_allocations.py measures
# it again), central 95%. The median is about 1: the allowance is the centre. The spread is wide because the
# register allocator sometimes keeps a held value's vregs by recomputing or reloading them (about 0: int8 block
# quantisation, cosine similarity) and sometimes spills other values beside it (4.4). Measured on user1 alone
# (RMSNorm, softmax, cross-entropy, top-k, LayerNorm backward: 20 kernels) it was 0.80-1.08, on user1..user4
# (central 90%) 0.09-2.67, which user5..user7 did not hold to.
# 0.0-4.7 over 154 before the rules for values reduced over rows, for rolled values and for dots run one at a time;
# 0.03-4.42 over 177 with them, 178 with sublane rolls.
HELD_SPREAD = Spread(0.03, 4.42, 178)
# What the register file keeps of values held across control flow: 48 of its 64 vregs (a controlled grid of
# f32 dots computed before a `pl.when` spilled the result but 192 KiB for every block shape). Values held
# across a reduction spilled whole (median; -0.2..+0.45 MiB around it) when larger than 16 vregs; up to that
# they stayed in registers (tokamax's flash kernels with 128-row blocks hold f32[128,128] scores and
# statistics across the key loop with no spill: 7 kernels of fixtures/oracle_new/user2, v5e..v7x).
_KEPT_IN_REGISTERS = 48 * 4096
_HELD_IN_REGISTERS_BYTES = 64 * 1024


def alloca_tile(alloca: Alloca) -> tuple[int, int]:
    """The (sublanes, lanes) tile Mosaic gives an allocation (infer_memref_layout): a 32-bit buffer no wider
    than 128 lanes is laid out untiled, one row per 128 lanes (a (bn, 1) f32 statistic takes bn x 512 bytes);
    anything else gets the sublane tile of a VMEM block."""
    shape = alloca.shape
    if alloca.bits == 32 and len(shape) >= 2 and shape[-1] <= LANES:
        return (1, LANES)
    return (vmem_sublane_tile(alloca.bits, shape[-2] if len(shape) >= 2 else 1), LANES)


def alloca_bytes(alloca: Alloca) -> int:
    """VMEM bytes of one allocation, tiled as `alloca_tile` says (0 outside VMEM)."""
    if alloca.space not in (None, "vmem") or not alloca.shape:
        return 0
    return padded_bytes(alloca.shape, alloca.bits, alloca_tile(alloca)[0], compact_columns=False)


def counted(alloca: Alloca) -> bool:
    return alloca.space in (None, "vmem") and not alloca.forwarded


def scope_peak(scope: Scope) -> int:
    """The most bytes of allocations live at once: a region's own allocations stay until it closes, the
    regions it runs one after the other take turns."""
    own = sum(alloca_bytes(a) for a in scope.allocas if counted(a))
    return own + max((scope_peak(child) for child in scope.children), default=0)


def body_peak(body: BodyFacts | None) -> int:
    return scope_peak(body.scope) if body is not None else 0


def across_control_flow_allowance(body: BodyFacts | None) -> Allowance | None:
    """The spill of vector values the body keeps whole across control flow or a store alone (what the register
    file does not keep): for kernels whose values held across a reduction other rules size (attention's score
    matrices). Slot attention's k and v, computed before its routing `fori_loop` and read in every iteration,
    were not counted (-48..-59%, an E1001 missed; with this -14..-21%, fixtures/oracle_new/user17); over
    user1-17 and jax's kernels 2 more estimates within 5%, none further from the compiler's figure."""
    if body is None:
        return None
    size = body.across_peak_bytes - _KEPT_IN_REGISTERS
    if size <= _HELD_IN_REGISTERS_BYTES:
        return None
    biggest = max((h for h in body.held if h.across != "reduction"), key=lambda h: h.bytes, default=None)
    if biggest is None:
        return None
    why = (f"allowance for vector values the body keeps whole across {biggest.across} ({_largest(biggest)}), "
           "spilled by the register allocator")
    return Allowance("held-across-control-flow", size, why, HELD_SPREAD)


def held_values_allowance(body: BodyFacts | None) -> Allowance | None:
    """The spill of vector values the body keeps whole (mosaic/body.py: across a reduction or control flow,
    computed whole for a reduction over rows, or rotated across vregs), when they exceed what the register
    file keeps."""
    if body is None:
        return None
    rotated = body.rotated_peak_bytes if body.rotated_peak_bytes > VREG_FILE_BYTES else 0
    held = max(body.held_peak_bytes, body.across_peak_bytes - _KEPT_IN_REGISTERS, body.reduced_peak_bytes)
    size = max(held, rotated)
    if size <= _HELD_IN_REGISTERS_BYTES:
        return None
    if rotated > held or not body.held:
        why = "allowance for rotated vector values (pltpu.roll across vregs) the body keeps whole"
    else:
        biggest = max(body.held, key=lambda h: h.bytes)
        why = (f"allowance for vector values the body keeps whole across a reduction ({_largest(biggest)}, "
               f"{_kept(biggest)})")
    return Allowance("held-across-reduction", size, f"{why}, spilled by the register allocator", HELD_SPREAD)


def _largest(held: HeldValue) -> str:
    """The largest held value as an allowance names it: `largest: f32[1024x4096] from extf`."""
    return f"largest: {held.element}[{'x'.join(map(str, held.shape))}] from {held.op.rsplit('.', 1)[-1]}"


def _kept(held: HeldValue) -> str:
    if held.across == "reduction over a non-lane axis":
        return "computed whole for a reduction over a non-lane axis"
    return f"kept across a {held.across}"


def spill_bound(body: BodyFacts | None) -> int:
    """The most register spill the body could cause: all its whole vector values live at once
    (mosaic/body.whole_values_peak); 0 when everything it computes fits in the registers. Not less the
    register file: the operations that compute and read a spilled value need vregs of their own (GeM pooling
    spilled 858 of the 896 vregs of its one live f32 block, fixtures/oracle_new/user11)."""
    if body is None or body.whole_values_peak_bytes <= VREG_FILE_BYTES:
        return 0
    return body.whole_values_peak_bytes
