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

2. A 16-bit dot (accumulated over contraction blocks, `acc[...] += dot(x[...], y[...])` as in jax's matmul
   and megablox gmm, or not) loads its whole lhs block (bm, bk) into vector registers and keeps it there across the
   MXU's column passes; the register allocator spills all of it but about 8 vregs (32 KiB). With a single
   pass (bn no wider than the MXU) the lhs streams and only the f32 result of the pass spills, beyond 40
   vregs. Per generation (`TpuGeneration.dot_lhs_spill_min_k` / `_min_n` / `dot_result_spill_min_rows`):
     v4, v5e, v5p (128-wide MXU): the lhs for bk >= 512 and bn >= 256 (v5e and v5p gave identical
          figures), the result pass (bm x 128 x 4 bytes) for bk >= 1024;
     v6e: the lhs for bk >= 1024 and bn >= 512, the result pass (bm x min(bn, 256) x 4) for bk >= 1024;
     v7x: the lhs for bk >= 1024 and bn >= 1024 only (bn <= 512 or bk = 512: no spill at all up to 1024
          rows); with 2048 rows the result pass spills too (1.94 MB for bn = 256, 512 and 1024), and more
          that this does not model (bk = 2048: 4.2-5.9 MB; such blocks mostly exceed the scoped limit).
   Evidence: the compiler's allocation lists (spill slots after register allocation) for the grids
   bm in {256, 512, 1024, 2048} x bn in {128, 256, 512, 1024} x bk in {512, 1024, 2048} of jax's matmul and
   tm in {256, 512} x tn x tk of gmm, bf16, on v4..v7x (fixtures/oracle_new/dot_grid/DOT_SPILL.tsv, 271
   kernels; tests/analyses/vmem/test_dot_spill.py): the figure with this spill is within 5% of the
   compiler's for 258 of them (the rule it replaced: 1.2 x the lhs block for bk >= 1024 on every
   generation, 0.5 x for bk = 512 on 128-wide MXUs, 94 of the 129 v5e/v6e/v7x ones). Measured spread on
   the oracle folders: `DOT_LHS_SPREAD`.

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
   vector register file (256 KiB) cost 0.5-0.95 x, larger ones (spilled whole) 1.05-1.1 x. A controlled grid
   on v7x (T=512, 8 q heads, 2 kv heads, page 16, kv pages per block 8/16/32 x queries per block 32/64/128;
   spill and internal scratch from the allocation lists) put values within the register file at 0.77-1.07 x
   (8 kernels), against the 0.52 of two page-32 kernels above: v7x takes 0.9, the median of all 11 (the grid
   went from 0/9 to 5/9 kernels within 5%, the rest within 6.3%). The factors
   are `TpuGeneration.loop_scores_factor` / `loop_spilled_scores_factor` (an estimate: the large-block
   v5e figures are under-estimated, v5p 128-page blocks by 9%). Values of at most one sublane tile of
   rows (paged attention's (4, 128) .. (8, 8192) scores of a decode step) are processed vreg by vreg:
   paged attention measured no internal scratch on v6e/v7x (ppcb 4 and 64: figure = windows, or 4 KiB
   below), and only rule 4's constant on v5p with (8, 8192) scores (256 KiB each).

4. A dot whose rows are not whole sublane tiles (decode attention: q heads per kv head) on a 128-wide MXU
   costs a constant 36 KiB of internal scratch. Controlled compiles of paged attention (2 kv heads, 1..16 q
   heads per kv head, f32 and bf16, 16 and 64 pages per block; the allocation list after register
   allocation): exactly 36864 bytes of `internal scratch` for 2, 3, 4, 6 and 12 rows on v4, v5e and v5p,
   whatever the dtype and block; none for 1, 8 and 16 rows (a matrix-vector product, whole tiles), and none
   on v6e at all.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from hloscan.analyses.tpu import TpuGeneration
from hloscan.analyses.vmem.allowance import Allowance, Spread
from hloscan.analyses.vmem.mosaic.body import vreg_bytes
from hloscan.analyses.vmem.mosaic.bytecode import MosaicKernel
from hloscan.analyses.vmem.tiling import LANES, VREG_BYTES, VREG_FILE_BYTES, dtype_bits, padded_bytes, vmem_sublane_tile

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
_DOT_LHS_KEPT_IN_REGISTERS = 8 * VREG_BYTES
_DOT_RESULT_KEPT_IN_REGISTERS = 40 * VREG_BYTES
_DOT_RESULT_MIN_K = 1024
DOT_LHS_SPREAD = Spread(0.11, 2.77, 67)  # 0.11-3.82 over 69 before dots ran one at a time (two kernels now hold values instead)


def dot_lhs_spill(kernel: MosaicKernel, inputs: list[Any], gen: TpuGeneration) -> Allowance | None:
    """Rule 2: the spilled lhs block and column pass of the result of a K-tiled 16-bit dot: of the largest
    of the body's dots, as the body computes them (an rhs built in a scratch, a second dot of a computed
    lhs), or of the first two blocks when the body was not read."""
    shapes = _dot_blocks(kernel, inputs)
    if not shapes:
        return None
    spills = [(dot_spill_bytes(gen, rows, depth, width, lhs_bytes), rows, depth, width)
              for rows, depth, width, lhs_bytes in shapes]
    size, rows, depth, width = max(spills)
    if not size:
        return None
    return Allowance("dot-lhs-spill", size,
                     f"allowance for compiler-internal scratch: the register spill of a K-tiled 16-bit dot's "
                     f"lhs block ({rows}, {depth}) (rhs block {width} wide) on {gen.name} "
                     "(empirical, from controlled compiles)", DOT_LHS_SPREAD)


def _dot_blocks(kernel: MosaicKernel, inputs: list[Any]) -> list[tuple[int, int, int, int]]:
    """(rows, depth, width, lhs bytes in VMEM) of each 16-bit dot rule 2 applies to."""
    if not _dots_16bit(kernel, inputs):
        return []
    if kernel.dots is None:
        lhs, rhs = inputs[0], inputs[1]
        rows, depth = lhs.block_shape[-2:]
        return [(rows, depth, rhs.block_shape[-1], lhs.padded_bytes)]
    return [(dot.result[-2], dot.lhs[-1], dot.result[-1], vreg_bytes(dot.lhs[-2:], dot.lhs_bits))
            for dot in kernel.dots if dot.lhs_bits == dot.rhs_bits == 16 and len(dot.lhs) >= 2
            and len(dot.result) >= 2]


def dot_spill_bytes(gen: TpuGeneration, rows: int, depth: int, width: int, lhs_bytes: int) -> int:
    """Rule 2's spill for an lhs block of `rows` x `depth` (`lhs_bytes` in VMEM) and an rhs block `width` wide."""
    if depth < gen.dot_lhs_spill_min_k:
        return 0
    size = max(0, lhs_bytes - _DOT_LHS_KEPT_IN_REGISTERS) if width >= gen.dot_lhs_spill_min_n else 0
    if depth >= _DOT_RESULT_MIN_K and rows >= gen.dot_result_spill_min_rows:
        size += max(0, rows * min(width, gen.mxu_width) * 4 - _DOT_RESULT_KEPT_IN_REGISTERS)
    return size


def _dots_16bit(kernel: MosaicKernel, inputs: list[Any]) -> bool:
    """A kernel that dots 16-bit values (attention kernels, which dot too, have their own allowance).
    Where the result goes does not matter: a dot accumulated into an f32 scratch (jax's matmul, gmm), into
    the f32 output block (`o[...] += dot(x, w.T)`), or not accumulated (`act(dot(x, w) + b)`, a LoRA or
    GELU-MLP block) spilled its lhs the same way (fixtures/oracle_new/user2: 9 such kernels on v5e..v6e
    within 3% once counted, none without a scratch had been)."""
    if not kernel.uses("tpu.matmul") or not kernel.uses("arith.addf") or kernel.uses("math.exp"):
        return False
    if kernel.dots is not None:
        return True
    return len(inputs) >= 2 and all(dtype_bits(b.dtype) == 16 for b in inputs[:2]) and len(inputs[0].block_shape) >= 2


# --------------------------------------------------------------------------------------- rule 3
LOOP_SCORES_SPREAD = Spread(0.69, 10.1, 47)  # ragged paged attention; user-written loops spilled up to 10x more


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
_PARTIAL_TILE_DOT_SCRATCH = 36 * 1024
SMALL_M_DOT_SPREAD = Spread(0.0, 7.44, 13)  # most exactly; a 2-row dot spilled 7.4x more, some none


def partial_tile_dot_scratch(gen: TpuGeneration, rows: int) -> int:
    """Rule 4's internal scratch for a dot result of `rows` rows."""
    return _PARTIAL_TILE_DOT_SCRATCH if gen.mxu_width <= 128 and rows > 1 and rows % _SUBLANES else 0


def small_m_dot_scratch(kernel: MosaicKernel, inputs: list[Any], gen: TpuGeneration) -> Allowance | None:
    """Rule 4: a dot whose rows are not whole sublane tiles, on a 128-wide MXU (a measured constant)."""
    if not inputs:
        return None
    partial = [shape[-2] for shape in kernel.results_of("tpu.matmul")
               if len(shape) >= 2 and partial_tile_dot_scratch(gen, shape[-2])]
    if not partial:
        return None
    return Allowance("small-m-dot", _PARTIAL_TILE_DOT_SCRATCH,
                     f"allowance for internal scratch of a dot with {min(partial)} rows (not whole {_SUBLANES}-row tiles) on a "
                     f"{gen.mxu_width}-wide MXU (a constant measured in controlled compiles)", SMALL_M_DOT_SPREAD)
