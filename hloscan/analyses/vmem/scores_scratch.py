"""Compiler-internal VMEM scratch of attention-like kernels: the f32 score matrices Mosaic keeps in VMEM.

An attention kernel computes `s = q @ k.T` (a (block_q, block_k) f32 matrix), `p = exp(s - m)` and
`p @ v`; beyond the vector register file (64 vregs of 8 x 128 x 32 bit = 256 KiB) these values live in
compiler-internal scratch, which `used_scoped_memory_configs` includes but no window or scratch operand
shows. The kernel's MLIR shows them: `math.exp` results and `tpu.matmul` results of that 2-D shape.

Evidence: the compiler's per-kernel figure minus the windows and scratch operands of the post-optimisation
dump (which knows the operands memory-space assignment put in VMEM), for every flash/splash attention
kernel of shared/corpus/tpu-oracle/real and fixtures/oracle_new/real (E = block_q x block_k x 4 bytes, n =
number of exps of that shape, i.e. key blocks unrolled in one grid step):

- forward kernels (one score matmul per exp): n x E x f (`TpuGeneration.scores_forward_factor`), f ~ 1.1 on v5e (1.07-1.14), 1.05 on v5p
  (0.99-1.12), 0.85 on v6e (0.65-1.01), 1.0 on v7x (0.80-1.26), v4 0.44-0.99 and 1.17 for a
  flash kernel with 1024 x 1024 blocks, whose capacity error names the scratch: "register allocator spill
  slots" 9.36M for two 4 MiB score matrices (so 1.15 on v4); blocks of exactly the
  register file (256 x 256 f32) only 0.33-0.65 E, and 128 x 128 ones 0-0.7 E.
- backward kernels (dq, dkv: more than two matmuls per score-shaped exp, for dP = dO @ v.T and dS) did NOT grow
  with the unrolled key blocks: 0.8-3.5 E in all, e.g. 2048 x 512 blocks with 4 unrolled steps 0.79-1.72 E
  on v6e/v7x. Over the 67 dq/dkv kernels of the shared corpus and fixtures/oracle_new (real, real2_attention,
  real3): median 1.08 E, quartiles 0.79 and 1.56 E (flash dq/dkv 1.2, splash dkv 0.94, splash dq 1.68);
  the allowance takes 1.2 E (1.4 E, fitted on the first 30, over-estimated splash).

Kernels that DMA some of their inputs themselves (ragged/paged attention: K/V pages in HBM) were not part
of this fit and keep `spilled_scores_scratch` (the register-file rule). A single score block
smaller than the register file, and any backward kernel's, get no allowance (128 x 128: 0-230 KiB measured,
no consistent pattern); unrolled small forward blocks do (see `attention_scores_scratch`).

The figure is an allowance fitted to those kernels, not a measurement. Register allocation scatters the
real spill at fixed block shapes: the compiler's allocation lists (fixtures/oracle_new/*/LLO_BREAKDOWN.tsv)
put it at 0.38-2.28x the forward allowance and 0.23-2.9x the backward one for 19 in 20 kernels
(`FORWARD_SPREAD`, `BACKWARD_SPREAD`; jax's bundled kernels and the user and library attention kernels of user1..7), and `estimate` reports that range with it. A controlled grid on v6e
(fixtures/oracle_new/dot_grid/ATTENTION_SPILL.tsv: flash and splash forward, bf16, block_q and key block
256..1024, 1, 2 or 4 key blocks unrolled) shows why no per-block factor can do better: with one key block
the spill is 0.8-1.2 E for blocks beyond the register file, but unrolling does not add a fixed share; flash
1024 x 256 spilled 1.22, 1.83 and 1.91 E for 1, 2 and 4 steps, 1024 x 512 0.97, 1.50 and 3.84 E, and splash
at the same shapes 1.23, 1.45, 1.67 E and 1.11, 1.29, 3.10 E: how far the LLO scheduler overlaps unrolled
iterations decides it.
"""

from __future__ import annotations

from hloscan.analyses.tpu import TpuGeneration
from hloscan.analyses.vmem.allowance import LOWER_BOUND, Allowance, Spread
from hloscan.analyses.vmem.mosaic.bytecode import MosaicKernel
from hloscan.analyses.vmem.tiling import LANES, VREG_FILE_BYTES, padded_bytes, vmem_sublane_tile

_SMALL_FACTOR = 0.5  # score matrices no larger than the register file
_BACKWARD_FACTOR = 1.2  # x one score matrix, however many key blocks are unrolled
# How far the compiler's own spill and internal scratch (its allocation list after register allocation,
# fixtures/oracle_new/*/LLO_BREAKDOWN.tsv) fell from the allowance: register allocation scatters it at fixed
# block shapes, so the estimate carries the range (test_allowance_spread measures these again).
FORWARD_SPREAD = Spread(0.38, 2.28, 207)
BACKWARD_SPREAD = Spread(0.23, 2.9, 128)


def _f32_bytes(shape: tuple[int, ...]) -> int:
    """An f32 value held in whole (8, 128) vregs."""
    return padded_bytes(shape, 32, 8, compact_columns=False)


def attention_scores_scratch(kernel: MosaicKernel, gen: TpuGeneration) -> Allowance | None:
    """The allowance for the f32 score matrices of an attention kernel, or None if it has none."""
    exps = [shape for shape in kernel.results_of("math.exp") if len(shape) >= 2]
    if not exps:
        return None
    score = max(exps, key=lambda s: (_f32_bytes(s), s))
    if score[-1] < LANES or score[-2] < 8:
        return None
    size = _f32_bytes(score)
    score_exps = sum(1 for s in exps if s == score)
    # Each key block also rescales its running statistics with exp(m_prev - m_new), kept (block_q, 128)
    # wide: with 128-wide key blocks those exps have the score's shape too.
    steps = max(1, score_exps // 2) if score[-1] == LANES else score_exps
    matmuls = len(kernel.results_of("matmul"))
    dims = "x".join(map(str, score))
    # Forward kernels do two matmuls (scores, values) per score-shaped exp(); backward kernels three to five
    # (s, dP, then dQ or dK and dV) per exp(). Counting matmuls by the score's shape instead confused the
    # two when block_k or the head dim equals the 128-lane width.
    backward = matmuls > 2 * score_exps
    if size < VREG_FILE_BYTES and (backward or steps <= 1):
        return None  # one small score block, or a backward kernel's: 0-230 KiB measured, no consistent allowance
    if backward:
        total = int(_BACKWARD_FACTOR * size)
        what = f"{_BACKWARD_FACTOR} x one {dims} f32 score matrix (backward kernel: {matmuls} matmuls)"
    else:
        # A register-file-sized matrix spills in part when it is the only one (0.33-0.65 E), and whole when
        # key blocks are unrolled: 2 and 4 steps of 256 x 256 f32 measured 2.0-2.4 E and 4.3 E in flash
        # forward kernels on v4..v7x (splash: 1.3-2.6 E on v5e/v5p, 1.7-4.6 E on v6e/v7x). Unrolled
        # smaller blocks spill as well: 256 x 128 f32, 2 steps 1.5-3.6 E, 4 steps 6 E; 128 x 128, 4-8 steps
        # 4.4-4.7 E (2 steps: 0-2.9 E).
        factor = gen.scores_forward_factor if size > VREG_FILE_BYTES or steps > 1 else _SMALL_FACTOR
        total = int(factor * steps * size)
        what = f"{factor} x {steps} f32 score matrices of {dims}"
    return Allowance("attention-backward" if backward else "attention-forward", total,
                     f"allowance for compiler-internal attention scratch, {what} (empirical fit)",
                     BACKWARD_SPREAD if backward else FORWARD_SPREAD)


def spilled_scores_scratch(kernel: MosaicKernel) -> Allowance | None:
    """Attention kernels (flash, splash, ragged paged attention) compute (block_q, block_k) score matrices
    and their exp() in f32 vectors; beyond the register file the compiler keeps each in internal VMEM
    scratch. A kernel that unrolls its inner loop over key blocks (flash attention with block_k <
    block_k_major) has one such matrix per iteration, so every exp() above the register file counts.

    Real kernels measured 0.7-1.2x that sum on top of their windows when the blocks are large, more when
    they are small (several temporaries of that shape live at once); the allowance is a lower bound.
    """
    exps = [shape for shape in kernel.results_of("math.exp") if len(shape) >= 2]
    sizes = [(padded_bytes(s, 32, vmem_sublane_tile(32, s[-2]), compact_columns=False), s) for s in exps]
    spilled = [(size, s) for size, s in sizes if size > VREG_FILE_BYTES]
    if not spilled:
        return None
    dims = "x".join(map(str, max(spilled)[1]))
    return Allowance("register-file-scores", sum(size for size, _ in spilled),
                     f"allowance for {len(spilled)} f32 attention score matrices (largest {dims}) kept in "
                     "internal scratch", LOWER_BOUND)
