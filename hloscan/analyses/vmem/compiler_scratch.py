"""Mosaic's own VMEM decisions that the kernel's block shapes do not show (estimates, fitted to the oracle).

Rules, each keyed on what the kernel's MLIR shows (never on kernel or case names). Figures are the
compiler's `used_scoped_memory_configs` for jax's Pallas kernels compiled for v4..v7x (libtpu 0.0.42.1),
varying one block size at a time (tiles written (tm, tk, tn) for a matmul of (tm, tk) x (tk, tn) blocks).

1. A grid-reduction accumulator is forwarded away when the reduction has one step.
   A kernel without runtime loops (no scf.for / scf.while) whose last grid axis is "arbitrary" with extent
   1, and whose every dot produces its output block's tile (a plain tiled matmul), zeroes, adds the dot
   to and stores a 32-bit scratch of that shape within one grid step; Mosaic forwards the stores to the
   loads and allocates no scratch. A softmax-rescaled accumulator (flash attention: dots of two shapes,
   scores and values, kv extent 1) stays when the body reads a grid index of extent > 1 (rule 1b): v5e
   flash_fwd q512 km2048 k512 measured its scratch in full. Evidence (megablox gmm, bf16, f32 out):
   v5e (512,512,512) k=512 (one K step) 4,812,800 B vs k=1024 (two steps) 5,861,376 B: exactly the
   1 MiB f32[512,512] accumulator; v6e (512,1024,1024) 12,152,832 vs 14,254,080 (2 MiB + 4 KiB);
   v6e (256,1024,256) 2,711,552 vs 2,994,176 (256 KiB + 20 KiB). The rest of the figure did not move.

1b. Any kernel without runtime loops whose body reads only grid indices of extent 1 (MosaicKernel.
   grid_indices_read: the indices its init/finalize `pl.when`s and causal masks compare) runs the same
   straight-line code in every grid step, so every store to a 32-bit, full-lane scratch reaches its loads
   within the step and is forwarded the same way. The compiler's own allocation list (LLO dump after
   register allocation, `--xla_jf_dump_llo_text`) shows it: flash attention fwd/dq/dkv with block_q =
   block_k_major = S (grid (1, H, 1, 1)) allocate none of their m/l/acc scratch on v5e, v6e and v7x, with
   block_q = S/2 (the causal mask reads the q index) all of it; non-causal kernels (only the kv index is
   read) with kv extent 1 none, with kv extent 2 all. A head-dim-64 accumulator (64 of 128 lanes) stayed,
   its m/l scratch went.

2. On generations with a 128-wide MXU (v4, v5e, v5p) a bf16/f16 dot with a contraction block of 512
   keeps part of its lhs in internal scratch. gmm on v5e and v5p, identical figures: (256,256,256) and
   (512,256,256) +0, (256,256,512) +12 KiB, (256,512,256) +140 KiB, (512,512,512) +604 KiB,
   (256,1024,256) +480 KiB; v6e/v7x (256-wide MXU): (256,512,256) +0, (512,512,512) +0 v7x / +84 KiB v6e.
   Allowance: half the lhs block for bk = 512 (0.55..1.18 measured, so a lower bound); bk >= 1024 is
   the K-tiled rule of estimate.py (1.2 x the lhs block, all generations).

3. Attention scores computed inside a runtime loop (ragged paged attention's scf.while over kv blocks,
   paged attention's scf.for) live in internal scratch whatever their size, not only beyond the register
   file. What grows is the set of f32 exp() values the body computes: the (q rows, kv block) score
   matrices and the (q rows, 128) rescale factors. rpa (T=256, 8 q heads, 2 kv heads, page 32), internal
   scratch = figure - windows, for kv pages per block 8 / 16 and queries per block 32 / 64:
     exp sum 512 KiB (kvp8 qb32):  v5e 568 KiB  v6e 404 KiB  v7x 264 KiB
     exp sum 768 KiB (kvp16 qb32): v5e 856 KiB  v6e 740 KiB  v7x 624 KiB
     exp sum 1 MiB   (kvp8 qb64):  v5e 1128 KiB v6e 768 KiB  v7x 534 KiB
   and with 64-page blocks and 256 queries (exp sum 18 MiB): v5e 24.2 MiB, v5p 21.4 MiB, v6e 19.5 MiB,
   v7x 19.0 MiB. So about 1.1-1.4 x the exp sum on 128-wide-MXU chips; on v6e/v7x values within the
   vector register file (256 KiB) cost 0.5-0.95 x, larger ones (spilled whole) 1.05-1.1 x. The factors
   are `TpuGeneration.loop_scores_factor` / `loop_spilled_scores_factor` (an estimate: the large-block
   v5e figures are under-estimated, v5p 128-page blocks by 9%). Values of at most one sublane tile of
   rows (paged attention's (4, 128) .. (8, 8192) scores of a decode step) are processed vreg by vreg:
   paged attention measured no internal scratch on v6e/v7x (ppcb 4 and 64: figure = windows, or 4 KiB
   below), and only rule 4's constant on v5p with (8, 8192) scores (256 KiB each).

4. A dot of at most one sublane tile of rows (decode attention: q heads per kv head) on a 128-wide
   MXU costs a constant internal scratch: paged attention f32 measured +36 KiB on v4, v5e and v5p,
   whatever the pages per block (4, 16, 64); bf16 (ppcb 128, v5p) +68 KiB. Allowance 36 KiB x 32/bits.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from hloscan.analyses.tpu import TpuGeneration
from hloscan.analyses.vmem.allowance import Allowance, Spread
from hloscan.analyses.vmem.mosaic.bytecode import MosaicKernel
from hloscan.analyses.vmem.tiling import LANES, VREG_FILE_BYTES, dtype_bits, padded_bytes, vmem_sublane_tile

_RUNTIME_LOOPS = ("scf.for", "scf.while")
_SUBLANES = 8


def has_runtime_loop(kernel: MosaicKernel) -> bool:
    return any(kernel.uses(op) for op in _RUNTIME_LOOPS)


# --------------------------------------------------------------------------------------- rule 1
def _dot_shapes(kernel: MosaicKernel) -> set[tuple[int, ...]]:
    return {tuple(shape[-2:]) for shape in kernel.results_of("tpu.matmul")}


def forward_single_step_accumulators(kernel: MosaicKernel, blocks: list[Any]) -> list[Any]:
    """Mark the 32-bit accumulator scratch of a one-step grid reduction as not allocated (rules 1, 1b)."""
    if _reads_only_unit_grid_indices(kernel):
        return [_forwarded(b, "scratch of a kernel whose every grid step runs the same straight-line code "
                              "(the body reads only grid indices of extent 1): Mosaic forwards its stores to "
                              "its loads and allocates none (oracle, LLO allocation list)")
                if _is_full_lane_32bit_scratch(b) else b for b in blocks]
    grid, semantics = kernel.grid, kernel.dimension_semantics
    dots = _dot_shapes(kernel)
    if not grid or grid[-1] != 1 or has_runtime_loop(kernel) or len(dots) != 1:
        return blocks
    if len(semantics) == len(grid) and semantics[-1] != "arbitrary":
        return blocks
    out_shapes = {tuple(b.block_shape[-2:]) for b in blocks if b.role == "output" and b.counted}
    out = []
    for b in blocks:
        if (_is_32bit_vmem_scratch(b) and tuple(b.block_shape[-2:]) in out_shapes & dots
                and math.prod(b.block_shape[:-2]) == 1):
            b = _forwarded(b, "accumulator of a one-step grid reduction: Mosaic forwards its stores to its "
                              "loads and allocates no scratch (oracle)")
        out.append(b)
    return out


def _reads_only_unit_grid_indices(kernel: MosaicKernel) -> bool:
    read, grid = kernel.grid_indices_read, kernel.grid
    if read is None or not grid or has_runtime_loop(kernel) or kernel.scratch_operands == 0:
        return False
    return all(0 <= i < len(grid) and grid[i] == 1 for i in read)


def _is_32bit_vmem_scratch(block: Any) -> bool:
    """A counted 32-bit (f32/s32) VMEM scratch buffer of at least two dimensions: what rules 1 and 1b forward."""
    return (block.role == "scratch" and block.counted and block.memory_space == "vmem"
            and block.dtype in ("f32", "s32") and len(block.block_shape) >= 2)


def _is_full_lane_32bit_scratch(block: Any) -> bool:
    return _is_32bit_vmem_scratch(block) and block.block_shape[-1] % LANES == 0


def _forwarded(block: Any, why: str) -> Any:
    return replace(block, counted=False, note=why)


# --------------------------------------------------------------------------------------- rule 2
_NARROW_MXU_MIN_K = 512
_NARROW_MXU_LHS_FRACTION = 0.5
NARROW_MXU_SPREAD = Spread(0.0, 2.36, 5)  # gmm/tgmm: none on some, up to 2.4x


def narrow_mxu_matmul_scratch(kernel: MosaicKernel, inputs: list[Any], gen: TpuGeneration) -> Allowance | None:
    """Rule 2: a 16-bit dot with a 512-deep contraction block on a 128-wide MXU."""
    if gen.mxu_width > 128 or not kernel.uses("tpu.matmul") or len(inputs) < 2:
        return None
    lhs = inputs[0]
    if any(dtype_bits(b.dtype) != 16 for b in inputs[:2]) or len(lhs.block_shape) < 2:
        return None
    if lhs.block_shape[-1] != _NARROW_MXU_MIN_K:
        return None
    return Allowance("narrow-mxu-dot", int(lhs.padded_bytes * _NARROW_MXU_LHS_FRACTION),
                     f"allowance for internal scratch of a 16-bit dot with bk={lhs.block_shape[-1]} on a "
                     f"{gen.mxu_width}-wide MXU (empirical)", NARROW_MXU_SPREAD)


# --------------------------------------------------------------------------------------- rule 3
LOOP_SCORES_SPREAD = Spread(0.81, 1.69, 23)  # ragged paged attention


def loop_scores_scratch(kernel: MosaicKernel, gen: TpuGeneration) -> Allowance | None:
    """Rule 3: f32 exp() values computed inside a runtime loop, times the generation's factors (values
    within the vector register file, and larger ones)."""
    if not has_runtime_loop(kernel) or not kernel.uses("tpu.matmul"):
        return None
    exps = [shape for name, shape, dtype in kernel.vector_values
            if name.endswith("math.exp") and len(shape) >= 2 and dtype == "f32" and shape[-2] > _SUBLANES]
    if not exps:
        return None
    sizes = [padded_bytes(s, 32, vmem_sublane_tile(32, s[-2]), compact_columns=False) for s in exps]
    small = sum(n for n in sizes if n <= VREG_FILE_BYTES)
    large = sum(n for n in sizes if n > VREG_FILE_BYTES)
    dims = "x".join(map(str, max(exps, key=math.prod)))
    return Allowance(
        "loop-scores", int(small * gen.loop_scores_factor + large * gen.loop_spilled_scores_factor),
        f"allowance for {len(exps)} f32 attention score/rescale values (largest {dims}) computed in a "
            f"runtime loop, {gen.loop_scores_factor} x / {gen.loop_spilled_scores_factor} x their size within "
            "/ beyond the register file (empirical estimate)", LOOP_SCORES_SPREAD)


# --------------------------------------------------------------------------------------- rule 4
_SMALL_M_DOT_SCRATCH_32BIT = 36 * 1024
SMALL_M_DOT_SPREAD = Spread(0.94, 7.44, 10)  # 9 of 10 within 0.94-1.0x; a 2-row dot 7.4x


def small_m_dot_scratch(kernel: MosaicKernel, inputs: list[Any], gen: TpuGeneration) -> Allowance | None:
    """Rule 4: a dot of at most one sublane tile of rows on a 128-wide MXU (constant, empirical)."""
    if gen.mxu_width > 128 or not inputs:
        return None
    rows = [shape[-2] for shape in kernel.results_of("tpu.matmul") if len(shape) >= 2]
    if not rows or min(rows) > _SUBLANES:
        return None
    bits = max(8, min(dtype_bits(b.dtype) for b in inputs))
    size = _SMALL_M_DOT_SCRATCH_32BIT * 32 // bits
    return Allowance("small-m-dot", size, f"allowance for internal scratch of a dot with {min(rows)} rows on a "
                     f"{gen.mxu_width}-wide MXU (empirical constant)", SMALL_M_DOT_SPREAD)
