"""What a Mosaic kernel body allocates itself, read from its operations (not from the pallas_call's windows).

Two kinds of scoped VMEM that no window or scratch operand shows:

* **Allocations** (`memref.alloca` in VMEM): `pl.run_scoped` regions, the buffers of a pipeline nested in the
  kernel (`pltpu.emit_pipeline` allocates its blocks x their buffer count the same way), DMA targets. Each
  lives for the `tpu.region` that holds it: the compiler's allocation list (LLO dump after register
  allocation, fixtures/oracle_new/user1/LLO_BREAKDOWN.tsv) shows nested regions adding up (2048x2048 +
  1024x2048 bf16 in a nested pair: 12.2 MiB) and sibling regions sharing their space (the same two one after
  the other: 8.15 MiB). An allocation the body only reads and writes with whole-vector loads and stores in its
  own straight-line code is forwarded in vector registers and never allocated (a run_scoped f32 temporary
  stored and read back: no allocation; the same stored in `pl.when` branches, or updated in a loop: allocated).

* **Values held across a reduction** (`HeldValue`): Mosaic executes elementwise vector code vreg by vreg, so a
  chain of elementwise ops needs no more than a few registers whatever the block size. A reduction
  (`vector.multi_reduction`, a dot) is a barrier: its result exists only after all of its input was read, and
  a value computed before it that is combined with its result afterwards (RMSNorm's f32 upcast `x` in
  `x * rsqrt(mean(x * x))`, softmax's `exp(x - max)` divided by its sum) must be kept whole meanwhile; beyond
  the vector register file the register allocator spills it to internal scratch. Values that are only loaded
  from a VMEM ref (or broadcast from one) are loaded again instead of kept. Measured on user1 (spill slots
  of the allocation list): RMSNorm / softmax / log-softmax / cross-entropy / top-k / LayerNorm backward
  spilled the peak of these values within 0.2-0.45 MiB, on v5e, v5p, v6e and v7x alike; f32 inputs (no
  upcast) spilled nothing. Stores keep their order too, so a value computed before a store and stored or
  read after it is held across it (an Adam step's moments across the parameter store). A narrow block widened
  only for a reduction is held narrow (`_narrowed`).

Both are facts of the body, independent of the TPU generation; body_allocations.alloca_bytes sizes the
allocations with Mosaic's tiling.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from hloscan.analyses.vmem.mosaic.bytecode import (Block, BlockArg, OpResult, Operation, Region, ShapedType, scalar_bits,
                                                   type_text)
from hloscan.analyses.vmem.tiling import LANES, VREG_BYTES as _VREG_BYTES, lane_packing, padded_bytes

# Ops that only re-view a memref: a use through them is a use of the allocation.
_VIEW_SUFFIXES = ("memref_slice", "memref_squeeze", "memref_reshape", "memref_bitcast", "reinterpret_cast",
                  "erase_memref_layout", "memref.subview", "memref.cast", "memref.collapse_shape",
                  "memref.expand_shape")
_VECTOR_ACCESS_SUFFIXES = ("vector.load", "vector.store", "tpu.vector_store", "tpu.vector_load", "tpu.load",
                           "tpu.store", "tpu.strided_load", "tpu.strided_store", "vector.transfer_read",
                           "vector.transfer_write")
_BARRIER_SUFFIXES = ("vector.multi_reduction", "vector.reduction", "tpu.matmul", "vector.contract",
                     "tpu.all_reduce")
_LOOP_SUFFIXES = ("scf.for", "scf.while")
_REGENERATED_SUFFIXES = ("arith.constant", "tpu.iota")
_REDUCTION_SUFFIXES = ("vector.multi_reduction", "vector.reduction", "tpu.all_reduce")
# Values the LLO code rematerialises instead of keeping: loads from VMEM refs, constants, iotas.
_FREE_SUFFIXES = ("vector.load", "tpu.vector_load", "tpu.load", "tpu.strided_load", "arith.constant",
                  "tpu.iota", "vector.transfer_read")
# A broadcast or reshape of a value costs what its source does: holding it means holding the source.
_TRANSPARENT_SUFFIXES = ("vector.broadcast", "vector.shape_cast")
# Operations never merged: side effects, or a result that depends on when it runs.
_PURE_EXCLUDED = ("load", "store", "dma", "sem", "alloca", "prng", "random", "region", "yield", "return",
                  "matmul", "trace", "barrier", "delay")
_WIDENING_SUFFIXES = ("arith.sitofp", "arith.uitofp", "arith.extf", "arith.extsi", "arith.extui", "tpu.fptosi")
# A wait for a DMA or a semaphore orders the code: what reads the copied data cannot be scheduled before it.
_WAIT_SUFFIXES = ("wait_dma", "wait_dma2", "sem_wait", "semaphore_wait", "wait_indirect_dma")
# Stores to a ref: their order is kept (refs may alias), so a store streams its value out before the next one.
_STORE_SUFFIXES = ("vector.store", "tpu.vector_store", "tpu.store", "tpu.strided_store", "vector.transfer_write")
# Operations the TPU computes on its transcendental unit (a division is a reciprocal there).
_TRANSCENDENTAL_SUFFIXES = frozenset({"exp", "exp2", "expm1", "log", "log1p", "log2", "tanh", "logistic", "rsqrt",
                                      "sqrt", "powf", "fpowi", "sin", "cos", "tan", "erf", "atan", "atan2", "divf"})
_REGISTER_FILE_BYTES = 64 * _VREG_BYTES
_DOT_SUFFIX = "tpu.matmul"
_ROTATE_SUFFIXES = ("tpu.dynamic_rotate", "tpu.rotate")
# Ops that only regroup what they read: rows concatenated or sliced from loaded rows can be loaded again.
_RECOMBINING_SUFFIXES = ("tpu.concatenate", "vector.concatenate", "vector.extract_strided_slice")
_LOAD_SUFFIXES = ("vector.load", "tpu.vector_load", "tpu.load", "tpu.strided_load", "vector.transfer_read")

_REGION = "tpu.region"
_ALLOCA = "memref.alloca"
_VREG_ROWS = 8


@dataclass(frozen=True, slots=True)
class Alloca:
    """One `memref.alloca` of the body."""

    shape: tuple[int, ...]
    element: str  # the MLIR element type text (`f32`, `bf16`, ...)
    space: str | None  # `vmem`, `smem`, `semaphore_mem`, ...
    forwarded: bool  # read and written only by whole-vector accesses in straight-line code: never allocated

    @property
    def bits(self) -> int:
        return scalar_bits(self.element) or 32


@dataclass(frozen=True, slots=True)
class Scope:
    """A `tpu.region` (or the function body): its own allocations, live until it closes, and the regions run
    inside it one after the other (siblings, which reuse each other's space)."""

    allocas: tuple[Alloca, ...]
    children: tuple["Scope", ...]

    def all_allocas(self) -> Iterator[Alloca]:
        yield from self.allocas
        for child in self.children:
            yield from child.all_allocas()


@dataclass(frozen=True, slots=True)
class HeldValue:
    """A vector value kept whole across one or more reductions: `phases` [from, to) counts the barriers."""

    op: str
    shape: tuple[int, ...]
    element: str
    bytes: int  # in whole vregs: (8 x packing, 128) tiles
    phases: tuple[int, int]
    across: str = "reduction"  # what it is kept across: "reduction" (a barrier) or "control flow"


@dataclass(frozen=True, slots=True)
class BodyFacts:
    scope: Scope
    held: tuple[HeldValue, ...]
    held_peak_bytes: int  # the most values held across one reduction, over the body's blocks
    across_peak_bytes: int = 0  # the most values held across one control-flow op, over the body's blocks
    loop_vectors: bool = False  # a loop (scf.for / scf.while) carries vector values from one iteration on
    # Positions of the main function's ref arguments that the body only ever loads or stores in parts (every
    # access moves fewer elements than the ref holds): a large scratch used this way is allocated apart from
    # the scoped region (estimate._classify_scratch).
    partly_accessed_args: frozenset[int] = frozenset()
    # The most bytes of computed vector values live at once if every operation ran whole, one after another,
    # over the body's blocks (`whole_values_peak`): what the register allocator could have to spill at most.
    whole_values_peak_bytes: int = 0
    # The largest value read only by a reduction over a non-lane axis and computed by a chain with a
    # transcendental (`_reduced_transcendentals`): spilled whole before the reduction reads it.
    reduced_peak_bytes: int = 0
    # The most bytes of rotated values live at once (`rotated_values_peak`): kept whole, spilled.
    rotated_peak_bytes: int = 0

    @property
    def allocas(self) -> tuple[Alloca, ...]:
        return tuple(self.scope.all_allocas())


def vreg_bytes(shape: tuple[int, ...], bits: int, dense: bool = False) -> int:
    """Bytes of a vector value held in vregs: whole (8 x packing, 128) tiles over its last two dimensions. A
    rank-1 value takes one row of vregs (a reduction's result, one value per row of its input), or with
    `dense` whole vregs filled in order (a 1-D block loaded or computed elementwise)."""
    dims = tuple(shape) or (1,)
    if len(dims) == 1 and dense:
        per_vreg = _VREG_ROWS * LANES * lane_packing(bits)
        return -(-dims[0] // per_vreg) * _VREG_BYTES
    return padded_bytes((1,) + dims if len(dims) == 1 else dims, bits, _VREG_ROWS * lane_packing(bits),
                        compact_columns=False)


# Per `read_body` call: merged blocks and nested peaks already computed, keyed by the object (see `_nested_peak`).
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("mosaic_body_memo", default=None)

def read_body(main: Operation) -> BodyFacts:
    """The body facts of a kernel's main function."""
    token = _MEMO.set({})
    try:
        return _read_body(main)
    finally:
        _MEMO.reset(token)


def _read_body(main: Operation) -> BodyFacts:
    users = _users(main)
    entry = main.regions[0].blocks[0] if main.regions and main.regions[0].blocks else None
    scope = _scope(entry.operations if entry else [], users) if entry else Scope((), ())
    held: list[HeldValue] = []
    peak = across = whole = reduced = rotated = 0
    for block in _blocks(main):
        # Mosaic merges repeated computations before code generation; the rules read the merged block.
        operations = _merged_block(block)
        values, block_peak, block_across = _held_in_block(operations)
        spilled = _reduced_transcendentals(operations)
        held.extend(values + spilled)
        peak, across = max(peak, block_peak), max(across, block_across)
        reduced = max([reduced] + [h.bytes for h in spilled])
        whole = max(whole, whole_values_peak(operations))
        rotated = max(rotated, rotated_values_peak(operations))
    loops = any(op.name.endswith(("scf.for", "scf.while")) and any(
        isinstance(t, ShapedType) and t.kind == "vector" for t in op.result_types) for op in main.walk())
    return BodyFacts(scope, tuple(held), peak, across, loops, _partly_accessed(main, entry) if entry else frozenset(),
                     whole, reduced, rotated)


def _partly_accessed(main: Operation, entry: Block) -> frozenset[int]:
    """The ref arguments of `entry` whose every use (through views) is a vector load or store of fewer
    elements than the ref holds."""
    accesses: dict[int, list[Operation]] = {}
    view_of: dict[int, int] = {}  # a view's op id -> the argument it views
    for op in main.walk():
        for value in op.operands:
            if isinstance(value, BlockArg) and value.block is entry:
                arg = value.index
            elif isinstance(value, OpResult) and id(value.op) in view_of:
                arg = view_of[id(value.op)]
            else:
                continue
            if op.name.endswith(_VIEW_SUFFIXES):
                view_of[id(op)] = arg
            else:
                accesses.setdefault(arg, []).append(op)
    out = set()
    for arg, ops in accesses.items():
        ref = entry.arg_types[arg] if arg < len(entry.arg_types) else None
        if isinstance(ref, ShapedType) and all(_moves_part_of(op, math.prod(ref.shape)) for op in ops):
            out.add(arg)
    return frozenset(out)


def _moves_part_of(op: Operation, ref_elements: int) -> bool:
    if not op.name.endswith(_VECTOR_ACCESS_SUFFIXES):
        return False
    vectors = [t for t in op.result_types if isinstance(t, ShapedType) and t.kind == "vector"]
    vectors += [_type(v) for v in op.operands if isinstance(v, OpResult) and _is_vector(v)]
    return bool(vectors) and all(math.prod(t.shape) < ref_elements for t in vectors)



# ------------------------------------------------------------------------------------------ whole values


def whole_values_peak(operations: list[Operation]) -> int:
    """The most bytes of computed vector values live at once in this block if each operation produced its
    whole result before the next one ran, in the block's own order, latest-first (each operation as late as
    its readers allow, the order a list scheduler that favours the longest remaining path gives when every
    vreg of a block is ready at once) or earliest-first (each as soon as its inputs exist: work that depends
    only on loaded blocks hoisted to the start, `_earliest_first`). Values loaded from a ref, constants and
    iotas are rematerialised, not kept (`_FREE_SUFFIXES`); a broadcast costs what its source does.

    The held-value rule (`_held_in_block`) says what is kept across a barrier; this says how much the
    register allocator could have to spill at most, the high end of the estimate's range. A nested block
    (a loop's body) runs on top of what is live around it, with its carried values live all through it, and
    a load read at more than one step or by a loop may be kept (`_kept_load`). The compiler's spill slots
    stayed within it for 364 of the 413 accepted one-kernel cases of fixtures/oracle_new/user1..user5 (its
    allocation lists, LLO_BREAKDOWN.tsv; 346 when nested blocks and kept loads were left out); above it
    are mostly dots and kernels whose spill exceeds every whole value (dwconv, max pooling with argmax).

    `operations`: the block with its repeated computations merged (`_common_subexpressions_merged`)."""
    local = {id(op) for op in operations}
    inputs_of = {id(op): [_source(v) for v in _vector_inputs(op, local)] for op in operations}
    readers: dict[int, list[Operation]] = {}
    for op in operations:
        if not op.name.endswith(_TRANSPARENT_SUFFIXES):
            for v in inputs_of[id(op)]:
                readers.setdefault(id(v.op), []).append(op)
    in_order = {id(op): i for i, op in enumerate(operations)}
    nested = {id(op): _nested_peak(op) for op in operations if op.regions}
    return max(_live_peak(operations, readers, in_order, nested),
               _live_peak(operations, readers, _latest_first(operations, readers), nested),
               _live_peak(operations, readers, _earliest_first(operations, inputs_of), nested))


def rotated_values_peak(operations: list[Operation]) -> int:
    """The most bytes of rotated values (`_wide_rotate`) live at once when each operation runs as soon as its
    inputs exist but no load moves above an earlier store (refs may alias), a rotated value live from its
    rotate to its last reader, and so is a computed value that is rolled (`_rolled_sources`); the figure is
    halfway between that order and the block's own (where each tap is rolled as it is used). The compiler
    computed rolled values whole and spilled them: stencils that roll a block by a few lanes and combine the
    taps (a causal conv's 3 taps, a 2:4 pruning window's 8, a median filter's) spilled the taps hoisted before
    their first reader, but an LPC residual's 32 taps only about half of them (15 MiB where hoisting keeps
    32: counted hoisted, +110..+182% and two false E1001, fixtures/oracle_new/user13); scans that roll a
    running value step by step spilled the value and its rolls. Over the 37 accepted one-kernel cases of
    user1..user11 with such rolls, hoisted estimates within 5% went from 5 to 9, and 7 more compiler errors were
    found, with no new false one; counting the rolled values' sources too added 3 within 5% and 2 errors found
    over user1..user12; halfway between the orders, 2 more within 5% and 1 error fewer over user1..user13, and one
    of the LPC kernels' two false E1001 gone (the v5e one remains, +65%)."""
    local = {id(op) for op in operations}
    inputs_of = {id(op): [_source(v) for v in _vector_inputs(op, local)] for op in operations}
    rolled = {id(op) for op in operations if _wide_rotate(op)} | _rolled_sources(operations, local)
    if not rolled:
        return 0
    hoisted = _rolled_peak(operations, inputs_of, rolled, _store_ordered_first(operations, inputs_of))
    in_order = _rolled_peak(operations, inputs_of, rolled, {id(op): i for i, op in enumerate(operations)})
    return (hoisted + in_order) // 2


def _rolled_peak(operations: list[Operation], inputs_of: dict[int, list[OpResult]], rolled: set[int],
                 step: dict[int, int]) -> int:
    """The most bytes of the `rolled` values live at once when each operation runs at its `step`."""
    last_reader: dict[int, int] = {}
    for op in operations:
        for v in inputs_of[id(op)]:
            last_reader[id(v.op)] = max(last_reader.get(id(v.op), -1), step[id(op)])
    change: dict[int, int] = {}
    for op in operations:
        end = last_reader.get(id(op), -1)
        if id(op) not in rolled or end <= step[id(op)]:
            continue
        size = _whole_bytes(OpResult(op, 0))
        change[step[id(op)]] = change.get(step[id(op)], 0) + size
        change[end] = change.get(end, 0) - size
    live = peak = 0
    for at in sorted(change):
        live += change[at]
        peak = max(peak, live)
    return peak


def _rolled_sources(operations: list[Operation], local: set[int]) -> set[int]:
    """The operations of this block whose computed result a wide rotate rolls (not loads, constants or iotas,
    which are loaded or generated again): the value and its rolls are whole together. A parallel cyclic
    reduction's a, b, c, d, each rolled both ways and read again by the step's update, and a fast
    Walsh-Hadamard transform's running value spilled with their rolls (fixtures/oracle_new/user12, user8)."""
    out = set()
    for op in operations:
        if _wide_rotate(op) and isinstance(op.operands[0], OpResult) and id(op.operands[0].op) in local:
            src = _source(op.operands[0])
            if not src.op.name.endswith(_FREE_SUFFIXES + _REGENERATED_SUFFIXES):
                out.add(id(src.op))
    return out


def _store_ordered_first(operations: list[Operation], inputs_of: dict[int, list[OpResult]]) -> dict[int, int]:
    """`_earliest_first`, with loads also kept after the stores that precede them (a 3-D stencil's planes,
    each loaded after the previous plane's store, were rolled one plane at a time)."""
    step: dict[int, int] = {}
    floor = load_floor = 0
    for op in operations:
        if op.name.endswith(_WAIT_SUFFIXES):
            floor = max(step.values(), default=-1) + 1
        start = max(floor, load_floor) if op.name.endswith(_LOAD_SUFFIXES) else floor
        step[id(op)] = max(start, 1 + max((step.get(id(v.op), 0) for v in inputs_of[id(op)]), default=-1))
        if op.name.endswith(_STORE_SUFFIXES):
            load_floor = step[id(op)] + 1
    return step


def _wide_rotate(op: Operation) -> bool:
    """A rotate (`pltpu.roll`) across vregs: along the lanes of a value wider than one vreg by an amount that
    is not known to be whole vregs (a roll by 128 lanes only renames vregs: RoPE's half rotation of a
    256-wide f32 block spilled nothing), or along the sublanes of a computed value (`_sublane_roll_of_computed`)."""
    if not op.name.endswith(_ROTATE_SUFFIXES) or not op.operands:
        return False
    t = op.result_types[0] if op.result_types else None  # the operand's type: it may be a loop's block argument
    dim = getattr(op.attributes.get("dimension"), "value", op.attributes.get("dimension"))
    if not isinstance(t, ShapedType) or not isinstance(dim, int) or not t.shape:
        return False
    rank = len(t.shape)
    amount = _constant_int(op.operands[1]) if len(op.operands) > 1 else \
        getattr(op.attributes.get("amount"), "value", op.attributes.get("amount"))
    if dim % rank == rank - 1:
        return t.shape[-1] > LANES and not (isinstance(amount, int) and amount % LANES == 0)
    return dim % rank == rank - 2 and _sublane_roll_of_computed(op, t, amount)


def _sublane_roll_of_computed(op: Operation, t: ShapedType, amount: Any) -> bool:
    """A roll along the sublanes across vregs of a value the body computed (not rows it can load again): a
    depthwise conv's taps of its expanded activations, a lattice's or grid's carried state rolled by one row.
    Rows loaded from a ref, or combined elementwise from loaded rows only, are reloadable and do not count: a
    causal conv's rows shifted by 1..3 spilled nothing (fixtures/oracle_new/user2); counting every sublane roll
    made 3 estimates worse than 5 better."""
    rows = _VREG_ROWS * lane_packing(scalar_bits(type_text(t.element)) or 32)
    if len(t.shape) < 2 or t.shape[-2] <= rows or (isinstance(amount, int) and amount % rows == 0):
        return False
    return not _reloadable(op.operands[0])


def _reloadable(value: Any, depth: int = 0) -> bool:
    """A value the body can load or generate again rather than keep: a load, constant or iota, or an elementwise
    combination, concatenation or slice of such values only (a causal conv's zero rows and upcast block). A
    loop's carried value (a block argument) and anything a reduction, dot or roll computed are not."""
    if not isinstance(value, OpResult) or depth > 16:
        return False
    op = _source(value).op
    if op.name.endswith(_FREE_SUFFIXES):  # loads, constants and iotas
        return True
    dialect = op.name.split(".")[-2] if op.name.count(".") else ""
    if op.regions or not (dialect in ("arith", "math") or op.name.endswith(_RECOMBINING_SUFFIXES)):
        return False
    inputs = [v for v in op.operands if _is_vector(v)]
    return bool(inputs) and all(_reloadable(v, depth + 1) for v in inputs)


def _constant_int(value: Any) -> int | None:
    if isinstance(value, OpResult) and value.op.name.endswith("arith.constant"):
        v = getattr(value.op.attributes.get("value"), "value", value.op.attributes.get("value"))
        return v if isinstance(v, int) else None
    return None


def _nested_peak(op: Operation) -> int:
    """The whole-values peak of the blocks nested in `op` (a loop's or a branch's body), which runs while
    everything live around `op` is still live. Within one `read_body` it is computed once per operation: every
    enclosing block's peak asks for it again, and `read_body` itself visits each nested block too."""
    return _memoised("peak", op, lambda: max(
        (_carried_bytes(block) + whole_values_peak(_merged_block(block)) for block in _blocks_of(op)), default=0))


def _merged_block(block: Any) -> list[Operation]:
    """`_common_subexpressions_merged(block.operations)`, once per block within one `read_body`."""
    return _memoised("merged", block, lambda: _common_subexpressions_merged(block.operations))


def _memoised(kind: str, obj: Any, compute: Callable[[], Any]) -> Any:
    """`compute()` for `obj`, once per `read_body` call (outside one, every time)."""
    memo = _MEMO.get()
    if memo is not None and (hit := memo.get((kind, id(obj)))) is not None and hit[0] is obj:
        return hit[1]
    value = compute()
    if memo is not None:
        memo[(kind, id(obj))] = (obj, value)  # the entry holds `obj`, so its id is not reused while it stands
    return value


def _carried_bytes(block: Any) -> int:
    """The vreg bytes of a nested block's vector arguments (a loop's carried values), live all through it."""
    return sum(_vector_bytes(t) for t in block.arg_types if isinstance(t, ShapedType) and t.kind == "vector")


def _blocks_of(op: Operation) -> Iterator[Any]:
    for region in op.regions:
        yield from region.blocks


def _latest_first(operations: list[Operation], readers: dict[int, list[Operation]]) -> dict[int, int]:
    """Each operation's step when run as late as its readers allow: the longest path from it to the block's
    end, counted back from the longest."""
    height: dict[int, int] = {}
    for op in reversed(operations):
        height[id(op)] = 1 + max((height[id(r)] for r in readers.get(id(op), [])), default=-1)
    top = max(height.values(), default=0)
    return {k: top - h for k, h in height.items()}


def _earliest_first(operations: list[Operation], inputs_of: dict[int, list[OpResult]]) -> dict[int, int]:
    """Each operation's step when run as soon as its inputs exist (one step after the latest of them), and
    never before a DMA or semaphore wait that precedes it in the block. The compiler hoisted independent work
    this way: a bit-packing kernel's 32 unrolled mask compares of loaded int8 planes, each needed one step
    later than the last by an OR chain, were all computed first and spilled (7.93 MiB of the 8 MiB they take
    as 32-bit vregs; the other two orders keep one or two of them live); a depthwise 5x5 convolution on v7x
    spilled 12.08 MiB of its 25 hoisted taps where the other orders bound it at 3.8 (fixtures/oracle_new/user9,
    user3: LLO_BREAKDOWN.tsv)."""
    step: dict[int, int] = {}
    floor = 0
    for op in operations:
        if op.name.endswith(_WAIT_SUFFIXES):
            floor = max(step.values(), default=-1) + 1
        step[id(op)] = max(floor, 1 + max((step.get(id(v.op), 0) for v in inputs_of[id(op)]), default=-1))
    return step


def _live_peak(operations: list[Operation], readers: dict[int, list[Operation]], step: dict[int, int],
               nested: dict[int, int]) -> int:
    """The most vreg bytes of values computed at one step and read at a later one, over the steps, with what
    a nested block needs on top at its operation's step."""
    change: dict[int, int] = {}
    inside: dict[int, int] = {}
    for op in operations:
        if nested.get(id(op)):
            inside[step[id(op)]] = max(inside.get(step[id(op)], 0), nested[id(op)])
        later = [step[id(r)] for r in readers.get(id(op), []) if step[id(r)] > step[id(op)]]
        if not later or op.name.endswith(_REGENERATED_SUFFIXES + _TRANSPARENT_SUFFIXES):
            continue
        if op.name.endswith(_FREE_SUFFIXES) and not _kept_load(readers.get(id(op), []), step):
            continue
        results = (OpResult(op, i) for i in range(len(op.result_types)))
        size = sum(_whole_bytes(v) for v in results if _is_vector(v))
        change[step[id(op)]] = change.get(step[id(op)], 0) + size
        change[max(later)] = change.get(max(later), 0) - size
    live = peak = 0
    for at in sorted(set(change) | set(inside)):
        # values read at this step are still live while a nested block at this step runs
        peak = max(peak, live + inside.get(at, 0))
        live += change.get(at, 0)
        peak = max(peak, live)
    return peak


def _kept_load(readers: list[Operation], step: dict[int, int]) -> bool:
    """A loaded value may be kept instead of loaded again when more than one step reads it or a loop or branch
    does (jacobi's grid, read by every iteration of a `fori_loop`: spilled beyond the computed values' peak);
    read once, it is loaded where it is read."""
    return len({step[id(r)] for r in readers}) > 1 or any(r.regions for r in readers)


def _whole_bytes(v: OpResult) -> int:
    """A value's vreg bytes."""
    return _vector_bytes(_type(v))


def _vector_bytes(t: ShapedType) -> int:
    """A vector type's vreg bytes; a mask (i1) takes what the 32-bit values it selects between take."""
    bits = scalar_bits(type_text(t.element)) or 32
    return vreg_bytes(tuple(t.shape), 32 if bits == 1 else bits, dense=len(t.shape) == 1)


# ------------------------------------------------------------------------------------------ allocations


def _users(main: Operation) -> dict[int, list[tuple[Operation, Any]]]:
    """Operation id -> (user, the block the user is in), for every operand that is an operation's result."""
    users: dict[int, list[tuple[Operation, Any]]] = {}

    def visit(op: Operation, block: Any) -> None:
        for value in op.operands:
            if isinstance(value, OpResult):
                users.setdefault(id(value.op), []).append((op, block))
        for region in op.regions:
            for inner in region.blocks:
                for child in inner.operations:
                    visit(child, inner)

    visit(main, None)
    return users


def _scope(operations: list[Operation], users: dict[int, list[tuple[Operation, Any]]]) -> Scope:
    allocas, children = [], []
    for op in operations:
        if op.name.endswith(_ALLOCA):
            allocas.append(_alloca(op, users))
        elif op.name.endswith(_REGION):
            for region in op.regions:
                for inner in region.blocks:
                    children.append(_scope(inner.operations, users))
        else:
            children.extend(_nested_scopes(op, users))
    return Scope(tuple(allocas), tuple(children))


def _nested_scopes(op: Operation, users: dict[int, list[tuple[Operation, Any]]]) -> list[Scope]:
    """The scopes of regions inside a control-flow op (a loop body's run_scoped): they run one at a time."""
    found = []
    for region in op.regions:
        for block in region.blocks:
            nested = _scope(block.operations, users)
            if nested.allocas:
                found.append(nested)
            else:
                found.extend(nested.children)
    return found


def _alloca(op: Operation, users: dict[int, list[tuple[Operation, Any]]]) -> Alloca:
    memref = op.result_types[0] if op.result_types else None
    if not isinstance(memref, ShapedType):
        return Alloca((), type_text(memref), None, False)
    return Alloca(tuple(memref.shape), type_text(memref.element), memref.space, _forwarded(op, users))


def _forwarded(alloca: Operation, users: dict[int, list[tuple[Operation, Any]]]) -> bool:
    """Whether every use of the allocation is a whole-vector load or store at constant indices in the block
    that holds the allocation (straight-line code: Mosaic forwards the stores to the loads)."""
    home = None
    uses = _terminal_uses(alloca, users)
    if not uses:
        return False
    for user, block in uses:
        if not user.name.endswith(_VECTOR_ACCESS_SUFFIXES) or not _constant_indices(user):
            return False
        if home is None:
            home = block
        if block is not home:
            return False
    return True


def _terminal_uses(op: Operation, users: dict[int, list[tuple[Operation, Any]]]) -> list[tuple[Operation, Any]]:
    found, stack, seen = [], [op], set()
    while stack:
        current = stack.pop()
        for user, block in users.get(id(current), []):
            if id(user) in seen:
                continue
            seen.add(id(user))
            if user.name.endswith(_VIEW_SUFFIXES):
                stack.append(user)
            else:
                found.append((user, block))
    return found


def _constant_indices(op: Operation) -> bool:
    for value in op.operands:
        if isinstance(value, OpResult) and value.op.name.endswith("arith.constant"):
            continue
        if isinstance(value, OpResult) and _is_vector(value):
            continue  # the stored value
        if isinstance(value, OpResult) and isinstance(_type(value), ShapedType):
            continue  # the ref (or a view of it)
        if value is not None:  # an index computed at run time, or a block argument
            return False
    return True


# ------------------------------------------------------------------------------------------ held values


def _blocks(op: Operation) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            yield block
            for child in block.operations:
                yield from _blocks(child)


def _type(value: Any) -> Any:
    if isinstance(value, OpResult) and value.index < len(value.op.result_types):
        return value.op.result_types[value.index]
    return None


def _is_vector(value: Any) -> bool:
    t = _type(value)
    return isinstance(t, ShapedType) and t.kind == "vector"


def _source(value: OpResult) -> OpResult:
    """Through broadcasts and shape casts to the value that is actually computed."""
    while value.op.name.endswith(_TRANSPARENT_SUFFIXES) and value.op.operands:
        inner = value.op.operands[0]
        if not isinstance(inner, OpResult) or not _is_vector(inner):
            break
        value = inner
    return value


def _captured(op: Operation) -> Iterator[Any]:
    """Operands of `op` and of every operation nested in its regions."""
    for inner in op.walk():
        yield from inner.operands


def _held_in_block(operations: list[Operation]) -> tuple[list[HeldValue], int, int]:
    """Phases of the block's vector values (how many barriers precede each) and the values that must be kept
    whole from one phase to a later one; returns them with the largest totals kept across one reduction and
    across one control-flow op.

    An elementwise value is computed at the latest phase its consumers allow (the LLO scheduler delays it to
    them: LayerNorm backward's `g - mean(g)`, read only after two more reductions, was not kept, `g` was),
    a reduction as soon as its input is complete. `operations`: the block with its repeated computations
    merged (`_common_subexpressions_merged`)."""
    local = {id(op) for op in operations}
    inputs_of = {id(op): _vector_inputs(op, local) for op in operations}
    eager = _eager_phases(operations, inputs_of)
    users: dict[tuple[int, int], list[Operation]] = {}
    for op in operations:
        if op.name.endswith(_TRANSPARENT_SUFFIXES):
            continue  # a broadcast's readers read its source
        for v in inputs_of[id(op)]:
            users.setdefault(_key(_source(v)), []).append(op)
    phase = dict(eager)
    consumes: dict[int, int | None] = {}  # op id -> the phase it reads its inputs at
    order = {id(op): i for i, op in enumerate(operations)}

    def combine(op: Operation) -> int | None:
        found = [phase.get(_key(_source(v))) for v in inputs_of[id(op)]]
        return max((p for p in found if p is not None), default=None)

    for op in reversed(operations):
        if op.name.endswith(_TRANSPARENT_SUFFIXES + _FREE_SUFFIXES):
            continue
        keys = [(id(op), i) for i, t in enumerate(op.result_types) if (id(op), i) in phase]
        if not keys or op.name.endswith(_BARRIER_SUFFIXES):
            consumes[id(op)] = _reads_at(op, phase, combine(op))  # a reduction or a store reads its inputs as
            continue  # soon as they exist
        later = [consumes.get(id(u)) for k in keys for u in users.get(k, [])]
        if later and all(c is not None for c in later):
            for k in keys:
                if phase[k] is not None:
                    phase[k] = max(phase[k], min(later))
        consumes[id(op)] = max((phase[k] for k in keys if phase[k] is not None), default=None)
    needed: dict[tuple[int, int], tuple[int, OpResult]] = {}
    for op in operations:
        at = _reads_at(op, phase, combine(op))
        if not op.name.endswith(_BARRIER_SUFFIXES):
            own = [phase[(id(op), i)] for i in range(len(op.result_types)) if phase.get((id(op), i)) is not None]
            at = max(own + ([at] if at is not None else []), default=None)
        if at is None:
            continue
        for v in inputs_of[id(op)]:
            src = _source(v)
            k = _key(src)
            if phase.get(k) is not None and at > phase[k]:
                needed[k] = (max(needed.get(k, (at, src))[0], at), src)
        rhs = _dequantized_rhs(op, phase)
        if rhs is not None:
            # A dot's rhs widened from 8 bits in the kernel (weight-only quantization) exists whole before the
            # dot: user1's bf16 x int8 matmuls spilled the bf16 copy (v5e, v6e), while megablox tgmm's bf16
            # operands upcast to f32 streamed into the MXU with little spill.
            k = _key(rhs)
            needed[k] = (max(needed.get(k, (0, rhs))[0], phase[k] + 1), rhs)
    held = [_narrowed(_held(v, (phase[k], last), "reduction"), v,
                      [op for op in users.get(k, []) if consumes.get(id(op)) == phase[k]])
            for k, (last, v) in needed.items()
            if not _stored_before_read_again(users.get(k, []), phase[k], consumes, order)]
    boundaries = {b for h in held for b in range(*h.phases)}
    peak = max((sum(h.bytes for h in held if h.phases[0] <= b < h.phases[1]) for b in boundaries), default=0)
    across, across_peak = _across_control_flow(operations, inputs_of, phase)
    return held + across, peak, across_peak


def _reads_at(op: Operation, phase: dict[tuple[int, int], int | None], ready: int | None) -> int | None:
    """The phase at which `op` reads its inputs: as soon as they exist (`ready`), except a dot, which reads them
    when the MXU gets to it, after the dots before it in the block (`_eager_phases`). Two dots of one
    windowed frame block (an STFT's cosine and sine transforms) kept the frames whole across the first and
    its result across the second: 5.12 MiB of spill on v6e, where reading both at once counted none
    (fixtures/oracle_new/user12)."""
    own = phase.get((id(op), 0)) if op.name.endswith(_DOT_SUFFIX) else None
    return ready if own is None else own - 1


def _stored_before_read_again(readers: list[Operation], at: int | None, consumes: dict[int, int | None],
                              order: dict[int, int]) -> bool:
    """Whether the value is stored whole to a ref, in the body's order, before every read of it at a later phase
    (a kernel's output block written before a reduction over it): the compiler reads it back from the ref
    instead of keeping it (a Hamming kNN stored its i32[1024, 2048] distances, then took their row minimum and
    compared them with it: 1.4 MiB of spill, not 8 MiB). A store after the reduction does not help: soft-capped
    logits stored after their logsumexp were kept whole (3.9 MiB of spill)."""
    if at is None:
        return False
    stores = [order[id(op)] for op in readers
              if op.name.endswith(_STORE_SUFFIXES) and not op.name.endswith("strided_store")]
    later = [order[id(op)] for op in readers
             if not op.name.endswith(_STORE_SUFFIXES) and (c := consumes.get(id(op))) is not None and c > at]
    return bool(stores and later) and min(stores) < min(later)


def _narrowed(held: HeldValue, v: OpResult, before: list[Operation]) -> HeldValue:
    """A block loaded narrow and widened (`x.astype(f32)` of a bf16 block) that only reductions read before
    the barrier (or store: `before`) is kept narrow: the compiler widens it inside the reduction and again after it, holding the
    loaded vregs. Measured (spill slots of the allocation lists): vocab-tiled logsumexp and argmax, column
    stats over bf16 blocks spilled 0.46-0.53 of the f32 upcast on v5e, v5p, v6e and v7x (7 kernels of
    fixtures/oracle_new/user2 and user3), while RMSNorm's upcast, also squared elementwise before its
    mean, spilled whole (user1). Across a reduction only a lane (last-axis) reduction keeps it narrow: a
    Welford column-stats kernel (mean over axis 0, then `(x - mean) ** 2` summed) spilled the whole f32 block
    on v5e and v7x (user4)."""
    widen = v.op
    if not widen.name.endswith(_WIDENING_SUFFIXES) or not widen.operands or not isinstance(widen.operands[0], OpResult):
        return held
    narrow = _source(widen.operands[0])
    if not narrow.op.name.endswith(_FREE_SUFFIXES) or not _is_vector(narrow):
        return held
    lanes_only = held.across == "reduction"
    if not before or not all(_reduces(op, lanes_only) for op in before):
        return held  # a dot's widened rhs is kept wide (_dequantized_rhs)
    small = _held(narrow, held.phases, held.across)
    return replace(held, bytes=small.bytes) if small.bytes < held.bytes else held


def _from_widened_1d(v: OpResult, depth: int = 0) -> bool:
    """Whether the 1-D vector `v` is (computed elementwise from) a narrower 1-D vector widened in the body."""
    op = v.op
    if depth > 16 or op.regions or op.name.endswith(_FREE_SUFFIXES + _BARRIER_SUFFIXES):
        return False
    if op.name.endswith(_WIDENING_SUFFIXES):
        return True
    return any(_from_widened_1d(_source(x), depth + 1) for x in op.operands
               if isinstance(x, OpResult) and _is_vector(x) and len(_type(x).shape) == 1)


def _reduces(op: Operation, lanes_only: bool) -> bool:
    """A vector reduction (with `lanes_only`, one over the last axis alone)."""
    if not op.name.endswith(_REDUCTION_SUFFIXES):
        return False
    if not lanes_only:
        return True
    dims = op.attributes.get("reduction_dims")
    source = _type(op.operands[0]) if op.operands and isinstance(op.operands[0], OpResult) else None
    rank = len(source.shape) if isinstance(source, ShapedType) else None
    values = getattr(dims, "values", None)
    return rank is not None and values is not None and tuple(values) == (rank - 1,)


def _reduced_transcendentals(operations: list[Operation]) -> list[HeldValue]:
    """Values larger than the register file that only a reduction over a non-lane axis reads, computed by an
    elementwise chain with a transcendental in it (`_TRANSCENDENTAL_SUFFIXES`, since the last load or
    barrier). The compiler computed these whole and spilled them before reducing: GeM pooling's
    exp(p log x) summed over the spatial (sublane) axis spilled 0.90-0.99 of the value on v5e..v7x, a column
    Welford update 0.93, a split-K softmax merge 0.73-0.80 (fixtures/oracle_new/user11, user4, user8).
    Without a transcendental the same reductions spilled anywhere from nothing to all of it (a column max
    of |x|: nothing; random pooling's selects: 0.74-0.98), and a value also stored (SiLU and GELU backward's
    bias gradients) spilled nothing; a lane reduction of such a chain is left to the held-value rule (the
    log-sum-exps of user3 spilled half of it)."""
    local = {id(op) for op in operations}
    readers: dict[tuple[int, int], int] = {}
    for op in operations:
        for v in _captured(op):
            if isinstance(v, OpResult):
                readers[_key(v)] = readers.get(_key(v), 0) + 1
    spilled = []
    for op in operations:
        if not _reduces(op, lanes_only=False) or _lane_reduction(op) or not op.operands:
            continue
        v = op.operands[0]
        if not isinstance(v, OpResult) or id(v.op) not in local or readers.get(_key(v), 0) != 1:
            continue
        held = _held(v, (0, 1), "reduction over a non-lane axis")
        if held.bytes > _REGISTER_FILE_BYTES and _transcendental_in_chain(v):
            spilled.append(held)
    return spilled


def _lane_reduction(op: Operation) -> bool:
    """Whether a reduction reduces the last (lane) axis, alone or with others."""
    source = _type(op.operands[0]) if op.operands and isinstance(op.operands[0], OpResult) else None
    values = getattr(op.attributes.get("reduction_dims"), "values", None)
    if not isinstance(source, ShapedType) or values is None:
        return True
    return len(source.shape) - 1 in tuple(values)


def _transcendental_in_chain(v: OpResult) -> bool:
    """Whether the elementwise chain computing `v` (back to loads, barriers and nested code) has a
    transcendental operation."""
    seen: set[int] = set()
    stack = [v]
    while stack:
        op = stack.pop().op
        if id(op) in seen or op.regions or op.name.endswith(_BARRIER_SUFFIXES + _FREE_SUFFIXES):
            continue
        seen.add(id(op))
        if op.name.rsplit(".", 1)[-1] in _TRANSCENDENTAL_SUFFIXES:
            return True
        stack.extend(x for x in op.operands if isinstance(x, OpResult) and _is_vector(x))
    return False


def _held(v: OpResult, phases: tuple[int, int], across: str) -> HeldValue:
    t = _type(v)
    bits = scalar_bits(type_text(t.element)) or 32
    # A 1-D value fills its vregs (SGD with momentum over f32[262144] blocks: 1.31 MiB of spill on v5e for two
    # values held across a store, not the 16 MiB of one-row vregs) unless it comes out of a reduction or is
    # computed from a narrow 1-D block widened in the kernel: the same SGD with a bf16 gradient spilled 17.88
    # MiB on v7x for f32[524288] values, one row of each vreg (fixtures/oracle_new/user3).
    dense = len(t.shape) == 1 and not v.op.name.endswith(_REDUCTION_SUFFIXES) and not _from_widened_1d(v)
    return HeldValue(v.op.name, tuple(t.shape), type_text(t.element), vreg_bytes(tuple(t.shape), bits, dense),
                     phases, across)


def _dequantized_rhs(op: Operation, phase: dict[tuple[int, int], int | None]) -> OpResult | None:
    if not op.name.endswith("tpu.matmul") or len(op.operands) < 2 or not isinstance(op.operands[1], OpResult):
        return None
    rhs = _source(op.operands[1])
    if phase.get(_key(rhs)) is None or not rhs.op.name.endswith(_WIDENING_SUFFIXES) or not rhs.op.operands:
        return None
    narrow = _type(rhs.op.operands[0]) if isinstance(rhs.op.operands[0], OpResult) else None
    bits = scalar_bits(type_text(narrow.element)) if isinstance(narrow, ShapedType) else None
    return rhs if bits is not None and bits <= 8 else None


def _across_control_flow(operations: list[Operation], inputs_of: dict[int, list[OpResult]],
                         phase: dict[tuple[int, int], int | None]) -> tuple[list[HeldValue], int]:
    """Computed vector values defined before a control-flow op (`pl.when`'s scf.if, a loop, a run_scoped
    region) or a store and read after it: code is not scheduled across either, so they are kept whole.

    - Control flow: a K-tiled f32 dot computed before its `pl.when(k == 0)` accumulator init spilled its whole
      result but 48 vregs, in a controlled grid of 128 kernels on v5e and v6e; the same dot after the init
      spilled nothing.
    - Stores keep their order (refs may alias): an Adam step that writes the parameter, then the moments it
      computed before, spilled both moment blocks but 48 vregs (v5e, v5p, v6e, v7x: 0.88-1.87 MiB, within
      0.07 MiB of that; fixtures/oracle_new/user2). What is read after the store only through cheap ops whose
      inputs all exist before it (`x[bt - 8:]` of a whole block) is computed before it instead, and only that
      result is kept (`_kept_across`). A value already stored is read back from its ref, not kept: an SGD
      step storing its f32 weights and then rounding them stochastically to a bf16 copy spilled nothing
      (fixtures/oracle_new/user4).""" 
    position = {id(op): i for i, op in enumerate(operations)}
    defined: dict[tuple[int, int], int] = {}
    uses: dict[tuple[int, int], list[tuple[int, Operation]]] = {}
    values: dict[tuple[int, int], OpResult] = {}
    for i, op in enumerate(operations):
        for v in inputs_of[id(op)]:
            src = _source(v)
            k = _key(src)
            if phase.get(k) is None or id(src.op) not in position:
                continue
            defined[k] = position[id(src.op)]
            uses.setdefault(k, []).append((i, op))
            values[k] = src
    last_use = {k: max(j for j, _ in spans) for k, spans in uses.items()}
    held, peak = [], 0
    for i, op in enumerate(operations):
        if not (op.regions or op.name.endswith(_STORE_SUFFIXES)):
            continue
        across = "control flow" if op.regions else "store"
        crossing = [k for k in defined if defined[k] < i < last_use[k]]
        live = [_kept_across(values[k], [u for j, u in uses[k] if j < i], [u for j, u in uses[k] if j > i], i,
                             across, inputs_of, defined)
                for k in crossing
                if not (across == "store" and any(j <= i and u.name.endswith(_STORE_SUFFIXES) for j, u in uses[k]))]
        if op.name.endswith(_LOOP_SUFFIXES):
            live += _read_by_loop(op, inputs_of, set(crossing))
        peak = max(peak, sum(h.bytes for h in live))
        held.extend(live)
    return held, peak


def _read_by_loop(loop: Operation, inputs_of: dict[int, list[OpResult]], counted: set[tuple[int, int]]) -> list[HeldValue]:
    """Vector values computed or loaded before a runtime loop that its body reads: every iteration reads them
    again, so they are kept whole for the whole loop, even a plain load (the LLO code does not load again in
    the loop what was loaded before it). Measured: power iteration (`lax.while_loop` over `A @ v` with `A`
    loaded before the loop) spilled the whole f32 `A` (v5e f32 1024x1024: 3.99 MiB; v7x bf16 2048x2048 widened
    to f32: 15.96 MiB; fixtures/oracle_new/user3)."""
    seen = set()
    out = []
    for v in inputs_of[id(loop)]:
        src = _source(v)
        if src.op.name.endswith(_REGENERATED_SUFFIXES):
            continue  # an iota or constant is generated again where it is read (a counting sort's (n, n) iotas)
        if _key(src) not in counted and _key(src) not in seen:
            seen.add(_key(src))
            out.append(_held(src, (0, 0), "loop"))
    return out


def _kept_across(value: OpResult, earlier: list[Operation], later: list[Operation], at: int, across: str,
                 inputs_of: dict[int, list[OpResult]], defined: dict[tuple[int, int], int]) -> HeldValue:
    """What is kept of `value` across the store or control-flow op at position `at`: the value, or the results
    of its later readers when each is a pure op with every input computed before `at` and together they are
    smaller (a slice of a block hoisted above a store)."""
    whole = _held(value, (0, 0), across)
    if across != "store":
        return whole
    whole = _narrowed(whole, value, earlier)

    def hoistable(op: Operation) -> bool:
        return (not op.regions and not op.name.endswith(_STORE_SUFFIXES)
                and not any(part in op.name for part in _PURE_EXCLUDED)
                and all(defined.get(_key(_source(v)), -1) < at for v in inputs_of[id(op)]))

    if not later or not all(hoistable(op) for op in later):
        return whole
    results = [_held(OpResult(op, i), (0, 0), across) for op in later
               for i, t in enumerate(op.result_types) if isinstance(t, ShapedType) and t.kind == "vector"]
    return min([whole, *results], key=lambda h: h.bytes) if len(results) == 1 else whole


def _common_subexpressions_merged(operations: list[Operation]) -> list[Operation]:
    """The block with repeated pure computations merged, as Mosaic's CSE pass does before code generation
    (jax traces `x - m` twice in `exp(x - m)` and `x - m - log(s)`; the compiler kept one, held across the
    sum: log-softmax f32 on v6e spilled the whole (16, 50304) difference). Operations are shallow-copied where
    their operands change; the decoded body is not modified."""
    seen: dict[Any, Operation] = {}
    now: dict[int, Operation] = {}  # original op id -> the op that stands for it in the merged block
    out = []
    for op in operations:
        renamed = _renamed(op, now)
        if not (op.regions or not op.result_types or op.name.endswith(_PURE_EXCLUDED)):
            signature = (op.name, tuple(_ref(v) for v in renamed.operands),
                         tuple(type_text(t) for t in op.result_types),
                         repr(sorted(op.attributes.items(), key=lambda kv: kv[0])))
            first = seen.get(signature)
            if first is not None:
                now[id(op)] = first
                continue
            seen[signature] = renamed
        if renamed is not op:
            now[id(op)] = renamed
        out.append(renamed)
    return out if now else operations


def _ref(v: Any) -> Any:
    if isinstance(v, OpResult):
        return ("r", id(v.op), v.index)
    if isinstance(v, BlockArg):
        return ("a", id(v.block), v.index)
    return ("?", id(v))


def _renamed(op: Operation, now: dict[int, Operation]) -> Operation:
    """`op` reading the stand-ins of merged or copied operations, itself and its nested operations."""
    def swap(v: Any) -> Any:
        return OpResult(now[id(v.op)], v.index) if isinstance(v, OpResult) and id(v.op) in now else v

    operands = [swap(v) for v in op.operands]
    changed = any(a is not b for a, b in zip(operands, op.operands))
    regions = op.regions
    if op.regions and now:
        copied = [[[_renamed(o, now) for o in b.operations] for b in r.blocks] for r in op.regions]
        # Regions none of whose operations read a merged one stay the decoded regions (and keep their identity:
        # `_merged_block` and `_nested_peak` memoise by it).
        if any(new is not old for region, blocks in zip(op.regions, copied)
               for block, ops in zip(region.blocks, blocks) for new, old in zip(ops, block.operations)):
            regions = [Region([Block(b.arg_types, ops) for b, ops in zip(r.blocks, rops)])
                       for r, rops in zip(op.regions, copied)]
            changed = True
    if not changed:
        return op
    return Operation(op.name, op.attributes, op.result_types, regions, operands)


def _key(v: OpResult) -> tuple[int, int]:
    return id(v.op), v.index


def _vector_inputs(op: Operation, local: set[int]) -> list[OpResult]:
    """The block's vector values `op` reads, in its operands or in the operations nested in its regions."""
    values = _captured(op) if op.regions else op.operands
    return [v for v in values if isinstance(v, OpResult) and id(v.op) in local and _is_vector(v)]


def _eager_phases(operations: list[Operation], inputs_of: dict[int, list[OpResult]]) -> dict[tuple[int, int], int | None]:
    """Each vector value's phase when computed as soon as its inputs are: None for values loaded again
    instead of kept, else the number of barriers before it."""
    phase: dict[tuple[int, int], int | None] = {}
    floor = 0  # nothing after a DMA wait runs before it: the phases reached when the wait comes
    last_dot = 0  # the MXU runs one dot at a time, in the block's order (`_reads_at`)
    for op in operations:
        if op.name.endswith(_WAIT_SUFFIXES):
            floor = max([floor] + [p for p in phase.values() if p is not None])
            continue
        if op.name.endswith(_TRANSPARENT_SUFFIXES):
            continue  # its phase is its source's (see _source)
        found = [phase.get(_key(_source(v))) for v in inputs_of[id(op)]]
        combined = max((p for p in found if p is not None), default=None)
        if op.name.endswith(_FREE_SUFFIXES):
            result = None
        elif op.name.endswith(_BARRIER_SUFFIXES):
            result = max(combined or 0, floor) + 1
            if op.name.endswith(_DOT_SUFFIX):
                result = last_dot = max(result, last_dot + 1)
        else:
            result = max(combined or 0, floor)
        for i, t in enumerate(op.result_types):
            if isinstance(t, ShapedType) and t.kind == "vector":
                phase[(id(op), i)] = result
    return phase
