"""Scoped-VMEM estimates (XLA error E1001) for Pallas/Mosaic `tpu_custom_call` kernels."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from hloscan.hlo.attrs import unquote
from hloscan.hlo.ir import Shape
from hloscan.analyses.tpu import GENERATIONS, KIB, MIB, TpuGeneration, generation
from hloscan.analyses.vmem import body_allocations, compiler_scratch
from hloscan.analyses.vmem.allowance import EXACT, LOWER_BOUND, Allowance, total_range
from hloscan.analyses.vmem.mosaic import read_kernel
from hloscan.analyses.vmem.scores_scratch import attention_scores_scratch, spilled_scores_scratch
from hloscan.analyses.vmem.mosaic.bytecode import BytecodeError, MosaicKernel, ShapedType, WindowParam, type_text
from hloscan.analyses.vmem.tiling import (LANES, dtype_bits, hbm_sublane_tile, padded_bytes,
                                          raw_bytes, round_up, vmem_sublane_tile)

DEFAULT_MARGIN = 0.10


# ---------------------------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlockEstimate:
    """One kernel operand, result or scratch buffer and the VMEM it takes."""

    index: int  # position among the kernel's windowed operands (inputs, then results), or scratch number
    role: str  # "input" | "output" | "scratch" | "scalar_prefetch"
    dtype: str
    block_shape: tuple[int, ...]
    full_shape: tuple[int, ...] | None
    memory_space: str  # "vmem", "smem", "any", "semaphore_mem", "hbm", ...
    tile: tuple[int, int]  # (sublanes, lanes) the block is padded to
    raw_bytes: int
    padded_bytes: int  # one buffer
    buffers: int  # 0 when the buffer is not in scoped VMEM
    counted: bool  # part of the scoped estimate
    index_map: tuple[str | int | None, ...] | None = None
    note: str | None = None

    @property
    def total_bytes(self) -> int:
        return self.padded_bytes * self.buffers if self.counted else 0


@dataclass(frozen=True, slots=True)
class BlockHint:
    """The largest block along one grid dimension that fits the limit (halving the current block)."""

    grid_dim: int
    block_sizes: tuple[tuple[int, int, int], ...]  # (operand index, block axis, new size)
    grid_size: int  # the grid dimension's new extent
    estimate_bytes: int


@dataclass(frozen=True, slots=True)
class KernelEstimate:
    """The VMEM estimate and verdict for one `tpu_custom_call`."""

    instruction_name: str
    kernel_name: str | None
    tpu: str
    grid: tuple[int, ...]
    blocks: tuple[BlockEstimate, ...]
    window_bytes: int  # Σ buffers × padded block bytes
    scratch_bytes: int  # VMEM scratch operands counted in the scoped estimate
    separate_scratch_bytes: int  # large scratch operands, checked against physical VMEM instead
    internal_bytes: int  # internal_scratch_in_bytes, or the allowance for compiler-internal scratch
    estimate_bytes: int  # what is compared with the limit (the measured figure when kind == "measured")
    kind: str  # "measured" | "estimate" | "whole-array"
    limit_bytes: int
    limit_source: str  # "vmem_limit_bytes" | "option" | "default" | "physical"
    physical_bytes: int
    verdict: str  # "fits" | "tight" | "E1001" | "vmem-oom"
    margin: float
    measured_bytes: int | None = None
    predicted_bytes: int | None = None  # the model's figure, also when a measured one exists
    lower_bound_note: str | None = None
    fitting_limit_bytes: int | None = None  # a vmem_limit_bytes that would fit, if any can
    block_hint: BlockHint | None = None
    misaligned: tuple[str, ...] = ()  # E2002 candidates
    notes: tuple[str, ...] = ()
    decode_error: str | None = None
    # Where the compiler's figure is expected, given the allowances' measured spreads (None: no allowance
    # with a spread, or a measured figure); the high end is None when an allowance is a lower bound.
    range_bytes: tuple[int, int | None] | None = None
    allowances: tuple[Allowance, ...] = ()
    # The kernel body's own allocations (run_scoped regions, inner pipelines' buffers, DMA targets) at their
    # peak over its regions (analyses/vmem/body_allocations.py); exact, part of estimate_bytes.
    body_bytes: int = 0
    # Every part was read from the kernel (windows, scratch, the body's allocations) and the body has none of
    # what the model leaves out (dots without a rule, vectors carried through loops, lane dims that are not
    # whole vregs): an estimate with no allowance is then the figure itself, not a lower bound.
    complete: bool = False
    # The most register spill the body could cause (every vector value it computes spilled whole beyond the
    # register file): the high end of range_bytes comes from it when it is larger than the allowances'.
    spill_bound_bytes: int = 0

    @property
    def figure_kind(self) -> str:
        """How far to trust the figure: "measured" (after_codegen), "exact" (every part read from the
        kernel), "range" (an allowance with its measured spread: range_bytes), "lower-bound" (something
        the model leaves out may add to it), or "whole-array" (the body could not be decoded)."""
        if self.kind in ("measured", "whole-array"):
            return self.kind
        if self.range_bytes is not None:
            return "range" if self.range_bytes[1] is not None else "lower-bound"
        exact_allowances = all(a.spread.low == a.spread.high == 1.0 for a in self.allowances)
        return "exact" if self.complete and exact_allowances else "lower-bound"

    @property
    def headroom_bytes(self) -> int:
        return self.limit_bytes - self.estimate_bytes

    @property
    def exceeds(self) -> bool:
        return self.verdict in ("E1001", "vmem-oom")


# ---------------------------------------------------------------------------------------------------
# backend_config
# ---------------------------------------------------------------------------------------------------


def parse_backend_config(text: str | None) -> dict[str, Any]:
    """The custom call's backend_config as a dict: raw JSON or a C-escaped quoted JSON string."""
    if not text:
        return {}
    text = text.strip()
    if text[:1] in "\"'":
        text = unquote(text) or ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"backend_config is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ValueError("backend_config JSON is not an object")
    return value


def _memory_config_size(config: dict[str, Any], key: str) -> int | None:
    """Size of the VMEM (memory_space 1) entry of `scoped_memory_configs`-like lists; None if absent/empty."""
    entries = config.get(key)
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get("memory_space", "1")) == "1":
            try:
                return int(entry.get("size"))
            except (TypeError, ValueError):
                return None
    return None


def used_scoped_bytes(config: dict[str, Any]) -> int | None:
    """The compiler's measured scoped VMEM of a kernel (`used_scoped_memory_configs`, written after codegen)."""
    return _memory_config_size(config, "used_scoped_memory_configs")


def kernel_body(config: dict[str, Any]) -> str | None:
    call = config.get("custom_call_config")
    body = call.get("body") if isinstance(call, dict) else None
    return body if isinstance(body, str) else None


# ---------------------------------------------------------------------------------------------------
# Tiling and padding
# ---------------------------------------------------------------------------------------------------

_MEMREF_TO_HLO = {
    "i1": "pred", "i4": "s4", "i8": "s8", "i16": "s16", "i32": "s32", "i64": "s64",
    "si8": "s8", "si16": "s16", "si32": "s32", "ui8": "u8", "ui16": "u16", "ui32": "u32",
    "bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64",
    "f8E4M3FN": "f8e4m3fn", "f8E5M2": "f8e5m2", "f8E4M3B11FNUZ": "f8e4m3b11fnuz", "f8E4M3": "f8e4m3",
    "f8E5M2FNUZ": "f8e5m2fnuz", "f8E4M3FNUZ": "f8e4m3fnuz", "f8E3M4": "f8e3m4", "f4E2M1FN": "f4e2m1fn",
}


# ---------------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Operand:
    role: str
    dtype: str
    full_shape: tuple[int, ...] | None
    hbm_tile: tuple[int, ...] | None  # first tile of the HLO layout, when the dump has one
    in_vmem: bool = False  # layout S(1): XLA already placed the whole array in VMEM


def _hlo_operands(operand_shapes: Sequence[Shape | None], result_shapes: Sequence[Shape | None],
                  prefetch: int) -> list[_Operand]:
    ops = [_operand("input", s) for s in list(operand_shapes)[prefetch:]]
    for shape in result_shapes:
        if shape is not None and shape.is_tuple:
            ops.extend(_operand("output", leaf) for _, leaf in shape.leaves())
        else:
            ops.append(_operand("output", shape))
    return ops


def _operand(role: str, shape: Shape | None) -> _Operand:
    if shape is None or not shape.is_array:
        return _Operand(role, "", None, None)
    tiles = shape.layout.tiles if shape.layout is not None else ()
    first = tiles[0].dims if tiles and None not in tiles[0].dims else None
    return _Operand(role, shape.element_type, tuple(shape.dims), first, shape.memory_space == 1)


def _grid_steps(grid: tuple[int, ...]) -> int:
    # A dynamic grid dimension (MLIR's kDynamic, printed as -2**63: gmm's group axis) has many steps at run
    # time; it must not turn the product negative and pass for a single-step grid.
    return math.prod(d if d >= 0 else 2 for d in grid) if grid else 1


def _keeps_window_in_vmem(block: Sequence[int], op: _Operand) -> bool:
    """Whether a kernel still windows an operand that is whole in VMEM (S(1)): when its block is not one
    contiguous range of the array's tiled VMEM layout, so Mosaic copies it into a window buffer instead of
    addressing it in place.

    Measured on the post-optimisation dumps of the real cases (the estimate from their S(1) layouts against
    the compiler's per-kernel figure): such blocks kept their buffers (flash-attention dq's (128, 128) block
    of a 256-wide broadcast, K-tiled matmul operands, megablox gmm's (128, 256) blocks of 4096-wide arrays:
    several tile rows, part of each), while blocks spanning the minor dimension did not (flash/splash q, k,
    v). With that rule 58 of 82 shared-corpus kernels and 51 of 111 in fixtures/oracle_new are within 5%
    from the post-optimisation dump, against 50 and 44 when every S(1) operand loses its window. The
    compiler's allocation list (fixtures/oracle_new/*/LLO_BREAKDOWN.tsv) adds blocks narrower than the minor
    dimension but one tile row high: splash dkv's (1, 8, 256) blocks of (4, 8, 1024) statistics, two whole
    (8, 128) tiles side by side, had no window allocation.
    """
    full = op.full_shape
    if not full or not block or len(block) != len(full):
        return False
    rows = vmem_sublane_tile(dtype_bits(op.dtype), full[-2]) if len(full) >= 2 else 1
    return not _contiguous(_in_tiles(block, rows), _in_tiles(full, rows))


def _in_tiles(shape: Sequence[int], rows: int) -> list[int]:
    """The shape counted in (rows, 128) tiles over its last two dimensions, the order VMEM stores them in."""
    if len(shape) < 2:
        return [math.ceil(shape[-1] / LANES)]
    return list(shape[:-2]) + [math.ceil(shape[-2] / rows), math.ceil(shape[-1] / LANES)]


def _contiguous(block: list[int], full: list[int]) -> bool:
    """Whether a row-major block is one contiguous range: ones before some axis, whole extents after it."""
    return any(all(b == 1 for b in block[:k]) and block[k + 1:] == full[k + 1:] for k in range(len(full)))


def _buffer_count(param: WindowParam, grid: tuple[int, ...], steps: int) -> tuple[int, str | None]:
    """Buffers for one window: pipeline_mode, else 1 when the block never moves (one grid step per core, or
    an index that does not change), else 2."""
    if param.buffer_count is not None:
        return param.buffer_count, f"pipeline_mode {param.pipeline_mode}"
    if steps <= 1:
        return 1, "single grid step" if _grid_steps(grid) <= 1 else "one grid step per TensorCore"
    if param.index_map is not None and all(_static_index(v, grid) for v in param.index_map):
        return 1, "block index constant over the grid"
    return 2, None


def steps_per_core(grid: tuple[int, ...], semantics: Sequence[str], gen: TpuGeneration) -> int:
    """Grid steps one TensorCore runs: a megacore chip (v4, v5p: two TensorCores behind one device) splits the
    first "parallel" grid axis between its cores. A core with one step has nothing to prefetch, so its blocks
    are single-buffered: v5p 2x2 average pooling over a grid of 2 had one 8 MiB input and one 2 MiB output
    window (the compiler's allocation list, fixtures/oracle_new/user3), not two of each."""
    steps = _grid_steps(grid)
    if not gen.megacore:
        return steps
    for extent, kind in zip(grid, semantics):
        if kind == "parallel" and extent >= 2:
            return steps // extent * -(-extent // 2)
    return steps


def _static_index(value: str | int | None, grid: tuple[int, ...]) -> bool:
    if isinstance(value, int):
        return True
    if isinstance(value, str) and value.startswith("g") and value[1:].isdigit():
        dim = int(value[1:])
        return dim < len(grid) and 0 <= grid[dim] <= 1
    return False


def _window_block(i: int, param: WindowParam, memref: Any, op: _Operand, grid: tuple[int, ...],
                  gen: TpuGeneration, steps: int | None = None) -> BlockEstimate:
    space = memref.space if isinstance(memref, ShapedType) else None
    dtype = op.dtype or _MEMREF_TO_HLO.get(type_text(getattr(memref, "element", "")), "f32")
    bits = dtype_bits(dtype)
    shape = param.window_bounds or (memref.shape if isinstance(memref, ShapedType) else ())
    # An operand with no window bounds whose memref is in VMEM (a kernel without a grid, or a BlockSpec of
    # the whole array) is copied in whole, once: the compiler listed a window allocation for it (user1).
    whole_in_vmem = not param.is_windowed and space == "vmem" and bool(shape)
    if (not param.is_windowed and not whole_in_vmem) or space not in (None, "vmem"):
        return BlockEstimate(i, op.role, dtype, tuple(shape), op.full_shape, space or "any", (0, 0),
                             raw_bytes(shape, bits), 0, 0, False, param.index_map,
                             "not a VMEM window (DMA'd by the kernel)")
    rows = shape[-2] if len(shape) >= 2 else 1
    tile = (vmem_sublane_tile(bits, rows), LANES)
    size = padded_bytes(shape, bits, tile[0], gen.compact_columns)
    if op.in_vmem and not _keeps_window_in_vmem(shape, op):
        # Post-optimisation dumps: memory-space assignment placed the whole operand in VMEM (S(1)), so the
        # kernel allocates no scoped window for it (oracle, every generation). The block's size is kept for
        # the internal-scratch rules, which depend on the block shape, not on where the array lives.
        return BlockEstimate(i, op.role, dtype, tuple(shape), op.full_shape, "vmem", tile,
                             raw_bytes(shape, bits), size, 0, False, param.index_map,
                             "whole operand in VMEM (S(1): from the layout, or predicted from XLA's memory-space assignment); no window")
    buffers, why = _buffer_count(param, grid, _grid_steps(grid) if steps is None else steps)
    if op.in_vmem:
        why = "; ".join(filter(None, ("whole operand in VMEM (S(1)), but its block is not one contiguous range "
                                      "of the array's tiles: still windowed", why)))
    return BlockEstimate(i, op.role, dtype, tuple(shape), op.full_shape, "vmem", tile, raw_bytes(shape, bits),
                         size, buffers, True, param.index_map, why)


def _scratch_block(i: int, memref: Any) -> BlockEstimate:
    space = memref.space if isinstance(memref, ShapedType) else None
    shape = memref.shape if isinstance(memref, ShapedType) else ()
    dtype = _MEMREF_TO_HLO.get(type_text(getattr(memref, "element", "")), type_text(getattr(memref, "element", "")))
    bits = dtype_bits(dtype)
    if space != "vmem":
        return BlockEstimate(i, "scratch", dtype, shape, None, space or type_text(memref), (0, 0),
                             raw_bytes(shape, bits), 0, 0, False, None, "not VMEM")
    rows = shape[-2] if len(shape) >= 2 else 1
    tile = (vmem_sublane_tile(bits, rows), LANES)
    # Scratch (rows, 1) buffers take whole (8, 128) tiles even on v5e: a real v5e dump measured 131072
    # bytes for two f32[1,1,128,1] scratch buffers. The compact rule is for window outputs only.
    return BlockEstimate(i, "scratch", dtype, shape, None, "vmem", tile, raw_bytes(shape, bits),
                         padded_bytes(shape, bits, tile[0], compact_columns=False), 1, True)


# The smallest scratch the oracle saw allocated apart from the scoped region (f32[8192,128]); a real kernel's
# small scratch taller than their blocks (ragged paged attention's f32[2,128,128] softmax stats) is scoped.
SEPARATE_SCRATCH_MIN = 4 * MIB


def _scratch_accessed_in_parts(kernel: MosaicKernel) -> frozenset[int] | None:
    """Scratch positions (0 = first scratch operand) the body loads and stores only in parts."""
    if kernel.body is None:
        return None
    first = len(kernel.arg_types) - kernel.scratch_operands
    return frozenset(arg - first for arg in kernel.body.partly_accessed_args if arg >= first)


def _classify_scratch(scratch: list[BlockEstimate], windows: list[BlockEstimate],
                      partly_accessed: frozenset[int] | None = None) -> list[BlockEstimate]:
    """Mark scratch that XLA allocates outside the scoped region.

    Oracle finding: a (bm, bn) accumulator scratch is part of `used_scoped_memory_configs` and the E1001
    check, but scratch buffers taller or wider than every window block (e.g. f32[8192..131072, 128]) were
    separate "scratch operand" allocations bounded only by physical VMEM. The exact rule XLA applies is
    unknown; "not larger than the biggest window block in its last two dims" separates all oracle cases.
    Those kernels touch their scratch a tile at a time; a scratch the body loads or stores whole counts in
    the scoped region however large (`partly_accessed`, the scratch positions the body only accesses in
    parts; None when the body was not read): a cumsum's f32[2048, 2048] triangular matrix, built whole in a
    `pl.when` and read whole by a dot, was in the compiler's E1001 figure (32.25M on v6e with 16 MiB of
    windows; fixtures/oracle_new/user2).
    """
    # Every window's block shape counts here, also those not charged because XLA already placed the whole
    # operand in VMEM (S(1)): the scratch still sits in the kernel's scoped region (seen in a real v5e dump).
    sized = [b for b in windows if b.block_shape]
    max_rows = max((b.block_shape[-2] for b in sized if len(b.block_shape) >= 2), default=0)
    max_cols = max((b.block_shape[-1] for b in sized), default=0)
    out = []
    for block in scratch:
        shape = block.block_shape
        rows = shape[-2] if len(shape) >= 2 else 1
        cols = shape[-1] if shape else 1
        in_parts = partly_accessed is None or block.index in partly_accessed
        if (block.counted and in_parts and (rows > max_rows or cols > max_cols)
                and block.padded_bytes >= SEPARATE_SCRATCH_MIN):
            block = replace(block, counted=False, note="separate scratch allocation (checked against physical VMEM)")
        out.append(block)
    return out


def _misaligned(block: BlockEstimate, op: _Operand) -> str | None:
    """Mosaic E2002: a block's last two dims must divide by the operand tiling or equal the full dims."""
    full, shape = op.full_shape, block.block_shape
    # A block of an operand placed whole in VMEM (S(1)) is still cut with the operand's tiling: the oracle's
    # misaligned int8 (400, 300) blocks failed with E2002 whatever memory-space assignment would have done.
    windowed = block.counted or (block.memory_space == "vmem" and block.role != "scratch")
    if full is None or not windowed or len(shape) != len(full) or not shape:
        return None
    bits = dtype_bits(block.dtype)
    rows_full = full[-2] if len(full) >= 2 else 1
    tiling = op.hbm_tile[-2:] if op.hbm_tile and len(op.hbm_tile) >= 2 else (hbm_sublane_tile(bits, rows_full), LANES)
    checks = list(zip(shape[-2:], full[-2:], tiling[-2:])) if len(shape) >= 2 else [(shape[-1], full[-1], LANES)]
    if all(b == f or b % t == 0 for b, f, t in checks):
        return None
    return (f"{block.role} {block.index}: operand of shape {tuple(full)} has tiling {tuple(tiling)}, but its "
            f"block shape {tuple(shape)} is not divisible by tiling evenly nor matches the full shape (E2002)")


# ---------------------------------------------------------------------------------------------------
# Compiler-internal scratch
# ---------------------------------------------------------------------------------------------------


def _internal_allowances(kernel: MosaicKernel, blocks: list[BlockEstimate], config: dict[str, Any],
                         gen: TpuGeneration) -> list[Allowance]:
    """`internal_scratch_in_bytes` when set; else allowances for known compiler-internal scratch.

    The allowances are empirical fits to the oracle's `used_scoped_memory_configs` (an estimate, not a
    measurement, each with its measured spread): Mosaic allocates this scratch itself (relayouts, spilled
    matmul results, upcasts).
    """
    call = config.get("custom_call_config")
    if isinstance(call, dict) and isinstance(call.get("internal_scratch_in_bytes"), int):
        return [Allowance("internal_scratch_in_bytes", call["internal_scratch_in_bytes"],
                          "internal_scratch_in_bytes", EXACT)]
    # The block rules read block shapes, which an operand whole in VMEM (S(1), no window) still has.
    inputs = [b for b in blocks if b.role == "input" and (b.counted or b.memory_space == "vmem")]
    outputs = [b for b in blocks if b.role == "output" and b.counted]
    loop_scores = compiler_scratch.loop_scores_scratch(kernel, gen)
    if loop_scores is not None:
        return [loop_scores]
    found = None
    # The block rules need the kernel's VMEM input blocks (windowed or whole in VMEM) and windowed outputs;
    # the score matrices do not (their inputs may be DMA'd by the kernel).
    dot_lhs = lambda k, i, o, b, g: compiler_scratch.dot_lhs_spill(k, i, g)
    small_m = lambda k, i, o, b, g: compiler_scratch.small_m_dot_scratch(k, i, g)
    for rule in (_int8_matmul_scratch, dot_lhs, small_m, _upcast_8bit_scratch):
        found = rule(kernel, inputs, outputs, blocks, gen) if inputs and outputs else None
        if found is not None:
            break
    # Attention kernels (exp() of dot results) keep their score matrices across the softmax's max: the
    # attention rules were fitted on them (per generation, with the unrolled key blocks, and no allowance
    # where their measurements showed no consistent one: small and backward blocks). Every other kernel gets
    # the body-level rule for values kept across a reduction.
    if not (kernel.uses("math.exp") and kernel.uses("tpu.matmul")):
        return [a for a in (found, body_allocations.held_values_allowance(kernel.body)) if a is not None]
    # Kernels that DMA some inputs themselves (ragged/paged attention) keep the register-file rule below;
    # the per-generation fit is for kernels whose every input arrives through a VMEM window.
    manual_dma = any(b.role == "input" and b.memory_space in ("any", "hbm") for b in blocks)
    scores = spilled_scores_scratch(kernel) if manual_dma else attention_scores_scratch(kernel, gen)
    if scores is None:
        # No score matrix the attention rules size: what the body keeps across its loops and branches still
        # spills, as in any kernel (slot attention's k and v, computed before its routing loop).
        scores = body_allocations.across_control_flow_allowance(kernel.body)
    return [a for a in (found, scores) if a is not None]


def _int8_matmul_scratch(kernel, inputs, outputs, blocks, gen) -> Allowance | None:
    """8-bit matmuls measured +86 KiB…1.9 MiB (relayout of the i32 result): a quarter of the output
    block, a lower bound of what was measured."""
    if not kernel.uses("tpu.matmul") or not any(dtype_bits(b.dtype) == 8 for b in inputs):
        return None
    out = max(outputs, key=lambda b: b.padded_bytes)
    return Allowance("int8-matmul", out.padded_bytes // 4, "allowance for 8-bit matmul internal scratch",
                     LOWER_BOUND)


_ARITH_OPS = ("arith.addi", "arith.addf", "arith.muli", "arith.mulf", "arith.subi", "arith.subf",
              "arith.divf", "arith.maxsi", "arith.maximumf", "arith.minsi", "arith.minimumf")


def _upcast_8bit_scratch(kernel, inputs, outputs, blocks, gen) -> Allowance | None:
    """On chips whose VPU works on 32 bits only (v4), an 8-bit elementwise kernel's widened values
    take a 32-bit copy of the output block per buffer (oracle: +8 MiB for 1 MiB int8 blocks)."""
    if not gen.upcast_8bit_scratch or kernel.uses("tpu.matmul"):
        return None
    if not (kernel.uses("arith.extsi") or kernel.uses("arith.extf")):
        return None
    if not any(kernel.uses(op) for op in _ARITH_OPS):
        return None  # a widen-then-narrow copy folds away (held-out: no scratch measured)
    if not any(dtype_bits(b.dtype) == 8 for b in inputs):
        return None
    out = max(outputs, key=lambda b: b.padded_bytes)
    if len(out.block_shape) < 2:
        return None
    rows = out.block_shape[-2]
    wide = padded_bytes(out.block_shape, 32, vmem_sublane_tile(32, rows))
    return Allowance("upcast-8bit", wide * out.buffers,
                     "allowance for compiler-internal 32-bit upcast scratch of an 8-bit elementwise kernel (empirical)",
                     LOWER_BOUND)


# ---------------------------------------------------------------------------------------------------
# Limits and verdicts
# ---------------------------------------------------------------------------------------------------


def resolve_limit(config: dict[str, Any], gen: TpuGeneration, vmem_limit_kib: int | None) -> tuple[int, str]:
    """Per-kernel vmem_limit_bytes, else the --xla_tpu_scoped_vmem_limit_kib option, else the default."""
    per_kernel = _memory_config_size(config, "scoped_memory_configs")
    if per_kernel:
        return per_kernel, "vmem_limit_bytes"
    if vmem_limit_kib:
        return vmem_limit_kib * KIB, "option"
    if not gen.scoped_limit_check:
        return gen.physical, "physical"
    return gen.default_limit, "default"


def _verdict(estimate: int, limit: int, limit_source: str, gen: TpuGeneration, margin: float) -> str:
    effective = min(limit, gen.physical)
    if estimate > gen.physical:
        # Beyond the chip's VMEM XLA reports the capacity error even when the scoped limit is exceeded
        # too (real v5p/v7x matmuls: "Used 83.10M of 64.00M vmem" with the 32M default limit).
        return "vmem-oom"
    if estimate > effective:
        # Above a per-kernel limit the scoped check fires (E1001); above physical VMEM (v4, or a limit
        # raised past it) XLA reports a plain VMEM out-of-memory instead.
        scoped = gen.scoped_limit_check and limit_source != "physical" and estimate > limit
        return "E1001" if scoped else "vmem-oom"
    if estimate > effective * (1 - margin):
        return "tight"
    return "fits"


def _fitting_limit(estimate: int, gen: TpuGeneration, margin: float) -> int | None:
    wanted = round_up(math.ceil(estimate * (1 + margin)), MIB)
    return wanted if wanted <= gen.physical else None


# ---------------------------------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------------------------------


@dataclass
class _Parts:
    blocks: list[BlockEstimate]
    windows: int
    scratch: int
    separate: int
    allowances: list[Allowance] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    body: int = 0  # the body's own allocations at their peak
    spill_bound: int = 0  # the most register spill the body could cause (body_allocations.spill_bound)

    @property
    def internal(self) -> int:
        return sum(a.size for a in self.allowances)

    @property
    def exact(self) -> int:
        return self.windows + self.scratch + self.body

    @property
    def total(self) -> int:
        return self.exact + self.internal


def _model(kernel: MosaicKernel, ops: list[_Operand], config: dict[str, Any], gen: TpuGeneration) -> _Parts:
    params = kernel.window_params or tuple(WindowParam(None) for _ in kernel.operand_types)
    memrefs = kernel.operand_types
    notes = []
    if len(ops) != len(params):
        notes.append(f"HLO has {len(ops)} operands+results but the kernel has {len(params)} windows")
    windows = []
    steps = steps_per_core(kernel.grid, kernel.dimension_semantics, gen)
    for i, param in enumerate(params):
        op = ops[i] if i < len(ops) else _Operand("output" if i >= len(ops) else "input", "", None, None)
        memref = memrefs[i] if i < len(memrefs) else None
        windows.append(_window_block(i, param, memref, op, kernel.grid, gen, steps))
    scratch = _classify_scratch([_scratch_block(i, m) for i, m in enumerate(kernel.scratch_types)], windows,
                                _scratch_accessed_in_parts(kernel))
    blocks = windows + scratch
    allowances = _internal_allowances(kernel, blocks, config, gen)
    notes.extend(a.note for a in allowances)
    scratch = compiler_scratch.forward_single_step_accumulators(kernel, scratch + windows)[:len(scratch)]
    blocks = windows + scratch + _alloca_blocks(kernel, gen)
    return _Parts(
        blocks=blocks,
        windows=sum(b.total_bytes for b in windows),
        scratch=sum(b.total_bytes for b in scratch),
        separate=sum(b.padded_bytes for b in scratch if b.memory_space == "vmem" and not b.counted),
        allowances=allowances,
        notes=notes,
        body=body_allocations.body_peak(kernel.body),
        spill_bound=body_allocations.spill_bound(kernel.body),
    )


def _alloca_blocks(kernel: MosaicKernel, gen: TpuGeneration) -> list[BlockEstimate]:
    """The body's `memref.alloca`s as blocks, for display: their sum is not the figure (sibling regions share
    their space; `_Parts.body` is the peak)."""
    if kernel.body is None:
        return []
    blocks = []
    for i, a in enumerate(kernel.body.allocas):
        dtype = _MEMREF_TO_HLO.get(a.element, a.element)
        size = body_allocations.alloca_bytes(a)
        if a.space not in (None, "vmem"):
            note = "not VMEM"
        elif a.forwarded:
            note = "read and written only by whole-vector accesses in straight-line code: forwarded, not allocated"
        else:
            note = "allocated by the kernel body (run_scoped / inner pipeline), live until its region closes"
        tile = body_allocations.alloca_tile(a) if a.shape else (0, 0)
        blocks.append(BlockEstimate(i, "alloca", dtype, a.shape, None, a.space or "vmem", tile,
                                    raw_bytes(a.shape, a.bits), size, 1, body_allocations.counted(a) and size > 0,
                                    None, note))
    return blocks


def _lower_bound_note(parts: _Parts) -> str:
    odd = [b for b in parts.blocks if b.counted and b.block_shape and b.block_shape[-1] % LANES]
    text = ("register spills and Mosaic-internal scratch are modelled only where an empirical allowance applies "
            "(attention scores, K-tiled and partial-tile dots, 8-bit matmuls and upcasts; each with its measured "
            "spread in range_bytes) and left out elsewhere; XLA may instead place whole small operands in VMEM "
            "(S(1)) and drop their windows (compiled figure lower)")
    if odd:
        text += "; lane dims not a multiple of 128 can cost 2-4x more (relayouts)"
    return text


def _block_hint(kernel: MosaicKernel, parts: _Parts, limit: int) -> BlockHint | None:
    """Halve the blocks that move along one grid dimension until the estimate fits."""
    best: BlockHint | None = None
    for dim in range(len(kernel.grid)):
        hint = _halve_along(dim, kernel.grid, parts, limit)
        if hint is not None and (best is None or hint.estimate_bytes > best.estimate_bytes):
            best = hint
    return best


def _halve_along(dim: int, grid: tuple[int, ...], parts: _Parts, limit: int) -> BlockHint | None:
    key = f"g{dim}"
    axes = [(b, b.index_map.index(key)) for b in parts.blocks
            if b.counted and b.role != "scratch" and b.index_map and key in b.index_map]
    if not axes:
        return None
    for factor in (2, 4, 8, 16, 32, 64):
        sizes, total = [], parts.total
        for block, axis in axes:
            new = block.block_shape[axis] // factor
            if new < 1 or block.block_shape[axis] % factor or not _tile_ok(block, axis, new):
                return None
            shape = block.block_shape[:axis] + (new,) + block.block_shape[axis + 1:]
            buffers = max(block.buffers, 2)
            total += padded_bytes(shape, dtype_bits(block.dtype), block.tile[0]) * buffers - block.total_bytes
            sizes.append((block.index, axis, new))
        if total <= limit:
            return BlockHint(dim, tuple(sizes), grid[dim] * factor, total)
    return None


def _tile_ok(block: BlockEstimate, axis: int, size: int) -> bool:
    rank = len(block.block_shape)
    if axis == rank - 1:
        return size % LANES == 0
    if axis == rank - 2:
        return size % vmem_sublane_tile(dtype_bits(block.dtype), size) == 0 and size >= 8
    return True


def _whole_array(ops: list[_Operand]) -> _Parts:
    """Formula (a) for undecodable bodies: every operand and result as one single-buffered VMEM block."""
    blocks = []
    for i, op in enumerate(ops):
        shape = op.full_shape or ()
        bits = dtype_bits(op.dtype) if op.dtype else 32
        tile = (vmem_sublane_tile(bits, shape[-2] if len(shape) >= 2 else 1), LANES)
        blocks.append(BlockEstimate(i, op.role, op.dtype, shape, shape, "vmem?", tile, raw_bytes(shape, bits),
                                    padded_bytes(shape, bits, tile[0]), 1, True, None, "whole array assumed"))
    return _Parts(blocks, sum(b.total_bytes for b in blocks), 0, 0)


def estimate_kernel(
    backend_config_text: str | None,
    operand_shapes: Sequence[Shape | None],
    result_shapes: Sequence[Shape | None] | Shape | None,
    *,
    tpu: str,
    vmem_limit_kib: int | None = None,
    instruction_name: str = "",
    margin: float = DEFAULT_MARGIN,
    residency_predicted: bool = False,
) -> KernelEstimate:
    """Estimate the scoped VMEM of one `tpu_custom_call` and compare it with the applicable limit.

    `result_shapes` is the instruction's result shape (a tuple shape is flattened) or a list of them.
    Never raises for a bad kernel body: the estimate falls back to whole-array sizes (kind
    "whole-array") and `decode_error` says why. Raises ValueError only for an unknown `tpu`.
    `residency_predicted`: some operands were marked S(1) by a prediction, not by the dump's layout.
    """
    gen = generation(tpu)
    if isinstance(result_shapes, Shape) or result_shapes is None:
        result_shapes = [result_shapes] if result_shapes is not None else []
    notes: list[str] = []
    try:
        config = parse_backend_config(backend_config_text)
    except ValueError as exc:
        config, decode_error = {}, str(exc)
    else:
        decode_error = None
    kernel = None
    body = kernel_body(config)
    if body is not None:
        try:
            kernel = read_kernel(body)
        except BytecodeError as exc:
            decode_error = f"kernel body not decoded: {exc}"
    elif decode_error is None:
        decode_error = "backend_config has no custom_call_config.body"
    # Leading operands that are not windows: one s32[] per dynamic grid dimension (gmm's group count, passed
    # before everything else), then the scalar-prefetch operands.
    dynamic_dims = sum(1 for d in kernel.grid if d < 0) if kernel else 0
    prefetch = kernel.scalar_prefetch + dynamic_dims if kernel else 0
    ops = _hlo_operands(operand_shapes, result_shapes, prefetch)
    parts = _model(kernel, ops, config, gen) if kernel else _whole_array(ops)
    notes.extend(parts.notes)
    limit, source = resolve_limit(config, gen, vmem_limit_kib)
    predicted = parts.total
    measured = used_scoped_bytes(config)
    kind = "measured" if measured is not None else ("estimate" if kernel else "whole-array")
    figure = measured if measured is not None else predicted
    if measured == 0:
        notes.append("measured 0 bytes: XLA placed the operands in VMEM itself (S(1))")
    verdict = _verdict(figure, limit, source, gen, margin)
    if parts.separate > gen.scratch_capacity:
        verdict = "vmem-oom"
        notes.append(f"scratch of {parts.separate} bytes exceeds VMEM ({gen.scratch_capacity} bytes)")
    misaligned = tuple(m for b, op in zip(parts.blocks, ops) if (m := _misaligned(b, op)))
    est = KernelEstimate(
        instruction_name=instruction_name,
        kernel_name=kernel.name if kernel else None,
        tpu=gen.name,
        grid=kernel.grid if kernel else (),
        blocks=tuple(parts.blocks),
        window_bytes=parts.windows,
        scratch_bytes=parts.scratch,
        separate_scratch_bytes=parts.separate,
        internal_bytes=parts.internal,
        estimate_bytes=figure,
        kind=kind,
        limit_bytes=limit,
        limit_source=source,
        physical_bytes=gen.physical,
        verdict=verdict,
        margin=margin,
        measured_bytes=measured,
        predicted_bytes=predicted,
        lower_bound_note=None if measured is not None else _lower_bound_note(parts),
        fitting_limit_bytes=_fitting_limit(figure, gen, margin) if verdict != "fits" else None,
        block_hint=_block_hint(kernel, parts, min(limit, gen.physical)) if kernel and verdict != "fits" else None,
        misaligned=misaligned,
        notes=tuple(notes),
        decode_error=decode_error,
        range_bytes=_estimate_range(parts) if kind == "estimate" else None,
        allowances=tuple(parts.allowances),
        body_bytes=parts.body,
        spill_bound_bytes=parts.spill_bound if kind == "estimate" else 0,
        # Operands predicted to sit whole in VMEM (residency.py) are an estimate of XLA's choice.
        complete=kernel is not None and not residency_predicted and _complete(kernel, parts),
    )
    if est.figure_kind != "lower-bound":
        est = replace(est, lower_bound_note=None)
    return est


def _complete(kernel: MosaicKernel, parts: _Parts) -> bool:
    """Whether the model read every part of this kernel's figure (see KernelEstimate.complete). Measured on
    user1: kernels like this were within 2% of the compiler (gathers, stencils, PRNG, run_scoped buffers,
    reductions into SMEM); dots outside the fitted rules (fused MLPs, pipelines nested in the kernel) and
    vectors carried through a loop (manual-DMA row sums) spilled up to a third more."""
    if kernel.body is None or kernel.uses("tpu.matmul"):
        return False
    if any(b.counted and b.block_shape and b.block_shape[-1] % LANES for b in parts.blocks if b.role != "scratch"):
        return False
    return not kernel.body.loop_vectors


def _estimate_range(parts: _Parts) -> tuple[int, int | None] | None:
    """The allowances' range; its high end raised to what the body could spill at most (the figure and every
    value it computes spilled whole), which also bounds the register spill no allowance models."""
    spread = None if all(a.spread == EXACT for a in parts.allowances) else total_range(parts.exact, parts.allowances)
    if not parts.spill_bound:
        return spread
    low, high = spread or (parts.total, parts.total)
    return low, max(high or 0, parts.total + parts.spill_bound)


