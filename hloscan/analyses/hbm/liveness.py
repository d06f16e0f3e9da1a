"""HBM liveness simulation over a schedule, following XLA's buffer semantics.

Every instruction output leaf is a *value*; values that must share memory (tuple/get-tuple-element/bitcast
forwarding, in-place dynamic-update-slice, while-loop carried state, entry input/output aliasing, async
copy pairs) are merged into one *buffer* with a union-find. A buffer lives from its first definition to its
last use in the flattened schedule (called computations of while/conditional/call are placed inline, as
XLA's sequential heap simulation does). Buffers of entry parameters and entry outputs are not temporaries;
buffers outside the default memory space (S(1) VMEM, S(5) host) or moved to host are not in HBM.

Two modes:
- `scheduled` (after_optimizations, is_scheduled=true): every non-forwarding instruction materialises.
- `predict` (before_optimizations, jax-lowered HLO): XLA has not fused yet, so cheap ops (elementwise,
  broadcast, layout changes, slices) are treated as fused into their consumer and only materialise where
  XLA must give them a buffer (loop state, outputs, in-place updates, custom calls). The text order is
  the schedule. This is an estimate: XLA's scheduler, fusion and rematerialisation differ.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

from hloscan.analyses.tpu import GENERATIONS, canonical_name
from hloscan.hlo.attrs import parse_frontend_attributes, parse_int_list, parse_name_list
from hloscan.hlo.ir import Computation, Instruction, Module, Shape
from hloscan.hlo.layout import (UnsizedShapeError, default_tiling, element_bits, minor_to_major, physical_bytes,
                                unpadded_bytes, with_layout)
from hloscan.hlo.ir import Layout
from hloscan.hlo.sharding import MANUAL_REGION_BOUNDS
from hloscan.hlo.signature import Alias, entry_aliases, entry_parameter_shapes, parse_aliases
from hloscan.analyses.hbm import donated
from hloscan.analyses.hbm.packing import Interval, packed_heap_bytes
from hloscan.analyses.hbm.partition import WHOLE, Split, shard_factors

HBM_SPACE = 0
HOST_SPACE = 5  # S(5)
HOST_PLACEMENTS = ("pinned_host", "unpinned_host")

# Instructions whose result is (part of) an operand's buffer: no new memory.
FORWARDING = frozenset({"get-tuple-element", "tuple", "bitcast", "optimization-barrier", "opt-barrier",
                        "copy-done", "add-dependency", "domain"})
# Sharding custom calls whose result is their operand's buffer before partitioning (prediction only).
VIEWS_BEFORE_PARTITIONING = MANUAL_REGION_BOUNDS | {"xla.sdy.FuncResultSharding"}
# Ops XLA fuses into their consumers before it assigns buffers (prediction mode only).
CHEAP = frozenset({
    "abs", "add", "and", "atan2", "broadcast", "cbrt", "ceil", "clamp", "compare", "complex", "concatenate",
    "constant", "convert", "copy", "cosine", "divide", "dynamic-slice", "exponential", "exponential-minus-one",
    "floor", "imag", "iota", "is-finite", "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply",
    "negate", "not", "or", "pad", "popcnt", "power", "real", "reduce-precision", "remainder", "reshape",
    "reverse", "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "slice", "sqrt", "subtract", "tan",
    "tanh", "transpose", "xor", "erf", "bitcast-convert", "stochastic-convert", "clz",
})
# Elementwise ops XLA's fusion does not duplicate into several consumers (InstructionFusion's "expensive"
# ops) unless they widen what they read (`_duplicated`): otherwise, with two or more readers, the value gets a
# buffer of its own (`_kept_for_later`). A log-softmax's exp
# over a 151936-word vocabulary, read by its sum and returned for the backward pass, was a 4.64G buffer in the
# compiled qwen train step (fixtures/oracle_new/sharded3); counting it as recomputed from the logits kept only
# the bf16 logits (-36% -> -1.6%). Over sharded1-3 the before-optimisation figure came within 15% for 49 of 81
# programs (44); decoders with unrolled layers went further over (+23..+82% -> +27..+125%): their attention
# probabilities, kept this way in every layer's rematerialised backward, are not all live at XLA's peak.
EXPENSIVE = frozenset({"atan2", "cbrt", "cosine", "divide", "erf", "exponential", "exponential-minus-one", "log",
                       "log-plus-one", "logistic", "power", "remainder", "rsqrt", "sine", "sqrt", "tan", "tanh"})
# Readers into which XLA's TPU fusion duplicates an expensive producer. A softmax's exp read by its sum and by
# the divide that normalises it was recomputed in both fusions (exponential twice in the compiled v7x
# diffusion sampler of fixtures/oracle_new/sharded7, no [.., 16384, 16384] f32 buffer); the log-softmax exp above
# is also returned in a tuple (the backward pass's residual), a reader that cannot fuse it.
FUSING_READERS = (CHEAP | {"reduce"}) - {"concatenate", "pad"}
# Elementwise consumers XLA fuses into a dot's output (_output_fused_shape).
OUTPUT_FUSED = frozenset({"convert", "multiply", "divide", "select", "add", "subtract", "maximum", "minimum", "negate",
                          "transpose", "reshape", "bitcast"})
# A minor dimension this small is not kept minor by XLA's layout assignment in a loop's relaid copy (it pads 2x or
# more): a Jamba decoder's f32 SSM state [.., 8192, 16] printed {4,3,2,1,0} was not 8x padded in the compiled loop,
# while a KV cache [.., 12, 64] kept its printed order and padding (fixtures/oracle_new/sharded13, sharded18).
_TINY_MINOR = 64
# Ops whose result is usually far smaller than what they read: the prediction schedules them early (_ready_order).
SHRINKING = frozenset({"dot", "reduce", "convolution"})
# Fused computations of these opcodes are part of one instruction, never simulated on their own.
NOT_INLINED_CALLS = frozenset({"fusion", "reduce", "reduce-window", "map", "sort", "scatter", "select-and-scatter",
                               "all-reduce", "reduce-scatter", "all-reduce-start", "custom-call"})


@dataclass
class Value:
    """One array leaf some instruction defines."""

    id: int
    inst: Instruction
    comp: Computation
    shape: Shape
    bytes: int
    space: int
    define: int
    last_use: int = -1
    host: bool = False
    split: object = None  # partition.Split: how a multi-device module divides it (None: one device)
    index: tuple[int, ...] = ()  # the leaf's shape index in a tuple-shaped instruction


@dataclass
class Virtual:
    """A cheap op's result in prediction mode: not a buffer yet, just the buffers it reads."""

    inst: Instruction
    comp: Computation
    shape: Shape
    position: int
    deps: frozenset[int]
    materialized: "Tree | None" = None


Tree = "int | Virtual | list"


@dataclass
class BufferLife:
    """A merged buffer: its size, live range and the value that names it."""

    root: int
    bytes: int
    start: int
    end: int
    value: Value
    role: str  # "temp", "parameter", "output", "constant", "host", "other-space", "in-argument-or-output"


@dataclass
class Simulation:
    """Result of one simulation: per-buffer lives plus the peak of the temporaries (of a scheduled module:
    the heap they take at fixed offsets, holes included; `peak_position` is where most bytes are live)."""

    buffers: list[BufferLife]
    peak_bytes: int
    peak_position: int
    positions: list[tuple[Computation, Instruction]] = field(default_factory=list)
    host_copies: int = 0  # device copies of host-memory arguments the prediction placed
    kept_scores: int = 0  # dots whose scores masked per example the prediction kept in f32 (`keep_masked_scores`)

    def live_at_peak(self) -> list[BufferLife]:
        live = [b for b in self.buffers if b.role == "temp" and b.start <= self.peak_position <= b.end]
        return sorted(live, key=lambda b: -b.bytes)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def leaf_bytes(shape: Shape, default_tiles: bool, minor: tuple[int, ...] = ()) -> int:
    """Physical bytes of an array leaf; an untiled layout gets XLA:TPU's default tiling when asked, with the
    dims `minor` minor-most when given (a dot's result, `_dot_minor_dims`)."""
    try:
        if default_tiles and shape.is_array and shape.dims and (shape.layout is None or not shape.layout.tiles):
            rank = len(shape.dims)
            if minor:
                major = tuple(d for d in range(rank - 1, -1, -1) if d not in minor)
                return _tiled_bytes(shape, tuple(sorted(minor, reverse=True)) + major)
            # XLA's layout assignment has not run yet: it avoids tiny minor dimensions, so take the
            # cheapest of the given order, row-major, and largest-dimensions-minor.
            orders = {minor_to_major(shape), tuple(range(rank - 1, -1, -1)),
                      tuple(sorted(range(rank), key=lambda d: (-shape.dims[d], -d)))}
            return min(_tiled_bytes(shape, order) for order in orders)
        return physical_bytes(shape)
    except (UnsizedShapeError, ValueError, KeyError):
        return 0


def _per_device(shape: Shape, split, size_of) -> int:
    """One device's share of an array leaf that `size_of` sizes: the shard's size when the split's tiles are known,
    else the whole divided by its pieces (the whole when nothing splits it)."""
    if not isinstance(split, Split) or split.pieces <= 1:
        return size_of(shape)
    local = split.local_shape(shape)
    if local is not None:
        return size_of(local)
    return -(-size_of(shape) // split.pieces)


def _tiled_bytes(shape: Shape, order: tuple[int, ...]) -> int:
    physical = tuple(shape.dims[d] for d in reversed(order))
    tiles, e_bits = default_tiling(shape.element_type, physical)
    space = shape.layout.memory_space if shape.layout is not None else 0
    return physical_bytes(with_layout(shape, Layout(order, tiles=tiles, element_size_bits=e_bits, memory_space=space)))


def _host_placement(inst: Instruction) -> str | None:
    """'host' / 'device' for jax's annotate_device_placement or MoveToHost/MoveToDevice custom calls."""
    if inst.opcode != "custom-call":
        return None
    target = inst.custom_call_target
    if target == "MoveToHost":
        return "host"
    if target == "MoveToDevice":
        return "device"
    if target == "annotate_device_placement":
        placement = parse_frontend_attributes(inst.attr("frontend_attributes")).get("_xla_buffer_placement")
        return "host" if placement in HOST_PLACEMENTS else "device"
    return None


class Simulator:
    """Builds values and buffers for one module; `run()` returns the Simulation."""

    def __init__(self, module: Module, predict: bool, generation: str | None = None,
                 hoist_host_copies: bool = False, keep_masked_scores: bool = True):
        self.module = module
        self.predict = predict
        self.hoist_host_copies = hoist_host_copies
        self.host_copies = 0  # device copies of host-memory entry arguments (prediction mode)
        # Scores masked per example are kept in f32 unless XLA must rematerialise them (`analyze`).
        self.keep_masked_scores = keep_masked_scores
        self.kept_scores = 0
        self.uf = _UnionFind()
        self.values: list[Value] = []
        self.position = 0
        self.positions: list[tuple[Computation, Instruction]] = []
        self.comps = module.computations_by_name
        self.param_roots: set[int] = set()
        self.output_roots: set[int] = set()
        self.constant_ids: set[int] = set()
        self.copy_reads: dict[int, frozenset[int]] = {}  # a copy's value -> the values it copies
        self.depth = 0
        self.generation = generation
        # Loop-invariant converts XLA hoists out of while loops (and CSEs across loops): leaf -> hoisted copy.
        self.invariants: list[tuple[int, set[int]]] = []  # (while start position, invariant leaf ids)
        self.loops: list[tuple[int, int, list[int]]] = []  # (first, last position, state leaves) per while run
        self.hoisted: dict[tuple[int, str], int] = {}
        self.relaid: dict[int, int] = {}  # entry parameter leaf -> its re-tiled copy (_relaid_weight_stacks)
        self.donated: set[int] = set()  # entry parameter leaves an output will alias
        self.readers: dict[str, dict[str, list[Instruction]]] = {}
        # The entry parameters' shapes in the layouts XLA will use (entry_computation_layout), read once.
        self.entry_layouts = entry_parameter_shapes(module)
        # A multi-device module before partitioning: each value is sized as one device's shard (partition.py).
        self.splits = shard_factors(module) if predict else None

    # ------------------------------------------------------------------------------------------ values

    def _new(self, inst: Instruction, comp: Computation, shape: Shape | None, split=None,
             index: tuple[int, ...] = ()) -> Tree:
        if shape is None:  # instruction printed without a shape: nothing to size
            return []
        if split is None and self.splits is not None:
            split = self.splits.get((comp.name, inst.name))
        if shape.is_tuple:
            parts = split if isinstance(split, list) else [split] * len(shape.tuple_shapes)
            parts = parts + [WHOLE] * (len(shape.tuple_shapes) - len(parts))
            return [self._new(inst, comp, s, p if p is not None else WHOLE, index + (k,))
                    for k, (s, p) in enumerate(zip(shape.tuple_shapes, parts))]
        vid = self.uf.add()
        minor = _dot_minor_dims(inst, shape) if self.predict else ()  # a scheduled dump's layouts are printed
        size = self._device_bytes(shape, split, minor) if shape.is_array else 0
        self.values.append(Value(vid, inst, comp, shape, size, shape.memory_space, self.position,
                                 split=split if isinstance(split, Split) else None, index=index))
        return vid

    def _device_bytes(self, shape: Shape, split, minor: tuple[int, ...] = ()) -> int:
        """One device's bytes of an array leaf (the whole array unless the module is split over devices)."""
        return _per_device(shape, split, lambda s: leaf_bytes(s, self.predict, minor))

    def _leaves(self, tree: Tree) -> list[int]:
        if isinstance(tree, int):
            return [tree]
        if isinstance(tree, Virtual):
            return list(tree.deps)
        out: list[int] = []
        for t in tree:
            out.extend(self._leaves(t))
        return out

    def _use(self, tree: Tree, position: int | None = None) -> None:
        at = self.position if position is None else position
        for vid in self._leaves(tree):
            v = self.values[vid]
            v.last_use = max(v.last_use, at)

    def _materialize(self, tree: Tree) -> Tree:
        """Give every Virtual inside the tree a real buffer (defined where the cheap op stood)."""
        if isinstance(tree, list):
            return [self._materialize(t) for t in tree]
        if not isinstance(tree, Virtual):
            return tree
        if tree.materialized is None:
            saved = self.position
            self.position = tree.position
            real = self._new(tree.inst, tree.comp, tree.shape)
            self._use(list(tree.deps) if tree.deps else [], tree.position)
            self.position = saved
            tree.materialized = real
        return tree.materialized

    def _union_trees(self, a: Tree, b: Tree) -> None:
        """Merge two trees' buffers leaf by leaf (loop state, aliasing)."""
        if isinstance(a, list) and isinstance(b, list):
            for x, y in zip(a, b):
                self._union_trees(x, y)
        elif isinstance(a, int) and isinstance(b, int):
            self.uf.union(a, b)

    def _callee(self, name: str | None) -> Computation | None:
        """A called computation by its attribute value (`%name` or `name`)."""
        return self.comps.get((name or "").strip().lstrip("%"))

    # ------------------------------------------------------------------------------------------ walking

    def run(self) -> Simulation:
        entry = self.module.entry
        layouts = self.entry_layouts
        params = {}
        for number, inst in entry.parameter_instructions.items():
            shape = _compiled_layout(inst.shape, layouts[number]) if number < len(layouts) else inst.shape
            tree = self._new(inst, entry, shape) if shape is not None else []
            if number < len(layouts):
                self._mark_host_leaves(tree, layouts[number])
            params[number] = tree
            self.param_roots.update(self._leaves(tree))
        self.donated = {leaf for alias in entry_aliases(self.module)
                        for leaf in self._leaves(_subtree(params.get(alias.parameter, []), alias.parameter_index) or [])}
        root = self._computation(entry, params)
        root = self._materialize(root)
        end = self.position
        self._use(root, end)
        self.output_roots.update(self._leaves(root))
        self._apply_io_aliases(params, root)
        return self._lives(end)

    def _mark_host_leaves(self, tree: Tree, layout: Shape) -> None:
        """Leaves of an entry parameter that the entry layout puts in host memory (S(5): jax's pinned_host
        arguments) are not HBM, though the parameter instruction of a before-optimisation dump prints no
        memory space."""
        if isinstance(tree, int):
            if layout.is_array and layout.memory_space == HOST_SPACE:
                self.values[tree].host = True
        elif isinstance(tree, list) and layout.is_tuple:
            for sub, sub_layout in zip(tree, layout.tuple_shapes):
                self._mark_host_leaves(sub, sub_layout)

    def _apply_io_aliases(self, params: dict[int, Tree], root: Tree) -> None:
        last_read = self._last_reads()
        for alias in entry_aliases(self.module):
            out = _subtree(root, alias.output_index)
            inp = _subtree(params.get(alias.parameter, []), alias.parameter_index)
            if out is None or inp is None:
                continue
            if self.predict and isinstance(out, int) and isinstance(inp, int) and \
                    self._written_while_read(out, last_read[self.uf.find(inp)]):
                # The loop writing the output still reads the donated argument (a decode step's new KV cache
                # stacked by the layer scan that reads the old one): XLA gives the output a buffer of its own
                # and copies it into the argument's at the end (two cache-sized temporaries, compiled).
                continue
            if self.predict and isinstance(out, int) and isinstance(inp, int) and \
                    self._relaid_for_loop(out, alias.parameter, alias.parameter_index):
                continue
            self._union_trees(out, inp)

    def _relaid_for_loop(self, out: int, number: int, index: tuple[int, ...]) -> bool:
        """Whether a donated argument that a while loop updates is laid out otherwise in the loop than in the
        entry layout (the loop's copy, value `out`, is then sized in that layout: `_size_in_printed_layout`): XLA
        copies it in to the loop's layout and back into the argument's buffer at the end, so the loop's copy is a
        buffer of its own. The loop takes the layout the instruction prints (XLA's layout
        assignment kept a KV cache {4,3,2,1,0} in the generation loop though the entry layout made it {4,2,3,1,0}
        to spare padding), in a generation's own tiles (v7x: 16-bit arrays in 16-row tiles, entry arguments in
        8). Decode loops over caches laid out so, compiled: two cache-sized copies in a multi-LoRA server
        (fixtures/oracle_new/sharded12, -35% and its OOM missed), a Jacobi decoder (sharded11, -51%) and an MLA
        decoder's latent and rope caches on v7x (sharded10, -46%)."""
        if self.values[out].inst.opcode != "while":
            return False
        param = self.module.entry.parameter_instructions.get(number)
        if param is None or param.shape is None or number >= len(self.entry_layouts):
            return False
        entry, printed = self.entry_layouts[number].at(index), param.shape.at(index)
        if entry is None or printed is None or not entry.is_array or entry.layout is None or not entry.layout.tiles:
            return False
        if printed.layout is not None and tuple(printed.layout.minor_to_major) != tuple(entry.layout.minor_to_major):
            self._size_in_printed_layout(self.values[out], printed)
            return True
        return self._retiled_for_loop(entry)

    def _size_in_printed_layout(self, value: Value, printed: Shape) -> None:
        """The loop's copy of a relaid argument takes the printed layout's padding too, not the cheapest order's: a
        LlamaGen CFG loop's K and V caches [.., 640, 12, 64], printed {4,3,2,1,0}, were 2.67x their data in the
        loop's (16,128) tiles (two 11.25G buffers per device on v5e, fixtures/oracle_new/sharded18), while the
        entry layout {2,4,3,1,0} spared that padding; sized the cheapest way the step was -44%."""
        if not printed.is_array or printed.layout is None or not printed.dims:
            return
        order = tuple(printed.layout.minor_to_major)
        if printed.dims[order[0]] < _TINY_MINOR:
            return  # layout assignment moves a tiny minor dim (a Mamba state's 16) where it pads less
        untiled = Shape(printed.element_type, printed.dims, printed.dynamic)  # the default tiles apply
        value.bytes = _per_device(untiled, value.split, lambda s: _tiled_bytes(s, order))

    def _retiled_for_loop(self, entry: Shape) -> bool:
        """A 16-bit argument in 8-row tiles on a generation whose loops take 16-row tiles (v7x), re-tiled when that
        pads nothing more (its second-minor dim a multiple of 16): an MLA decoder's latent cache [.., 8192, 512] was
        copied into (16,128) tiles for its generation loop, a split-KV cache [.., 32768, 8, 128] kept its (8,128)."""
        gen = GENERATIONS.get(canonical_name(self.generation or "") or "")
        if gen is None or gen.dot_operand_sublanes_16bit <= 8 or not _weight_stack(entry):
            return False
        order = entry.layout.minor_to_major
        return len(order) >= 2 and entry.dims[order[1]] % gen.dot_operand_sublanes_16bit == 0

    def _last_reads(self) -> dict[int, int]:
        """Per merged buffer, the position of its last read."""
        last: dict[int, int] = {}
        for v in self.values:
            r = self.uf.find(v.id)
            last[r] = max(last.get(r, v.last_use), v.last_use)
        return last

    def _written_while_read(self, out: int, read_at: int) -> bool:
        """Whether `out` is the state of a loop that runs past `read_at` (and so writes it while a buffer
        last read at `read_at` is still in use)."""
        o = self.uf.find(out)
        for first, last, leaves in self.loops:
            if first < read_at <= last and any(self.uf.find(v) == o for v in leaves):
                return True
        return False

    def _computation(self, comp: Computation, params: dict[int, Tree]) -> Tree:
        """Simulate a computation inline; returns the root's tree."""
        env: dict[str, Tree] = {}
        self.depth += 1
        for inst in (_ready_order(comp) if self.predict else comp.instructions):
            env[inst.name] = self._instruction(comp, inst, env, params)
        self.depth -= 1
        return env.get(comp.root.name, [])

    def _operand(self, env: dict[str, Tree], comp: Computation, inst: Instruction, i: int) -> Tree:
        op = inst.operands[i]
        tree = env.get(op.name, []) if op.name else []
        for k in op.tuple_index:
            tree = tree[k] if isinstance(tree, list) and k < len(tree) else []
        return tree

    def _instruction(self, comp: Computation, inst: Instruction, env: dict[str, Tree],
                     params: dict[int, Tree]) -> Tree:
        op = inst.opcode
        operands = [self._operand(env, comp, inst, i) for i in range(len(inst.operands))]
        if op == "parameter":
            number = inst.parameter_number
            return params.get(number, []) if number is not None else []
        if op in ("while", "conditional", "call") and self.depth < 64:
            return self._control(comp, inst, operands)
        self.positions.append((comp, inst))
        self.position += 1
        here = self.position
        if op == "get-tuple-element":
            index = int(inst.attr("index", "0") or 0)
            src = operands[0] if operands else []
            return src[index] if isinstance(src, list) and index < len(src) else src
        if op == "tuple":
            return list(operands)
        if op == "copy-done":
            # copy-start's tuple is (destination, source, context). The source is read until the copy is
            # done; the copy's value is the destination only (forwarding the whole tuple would make a device
            # buffer copied to host an output).
            started = operands[0] if operands else []
            if not (isinstance(started, list) and len(started) >= 2):
                return started
            self._use(started[1])
            return started[0]
        if op in FORWARDING or (op == "bitcast"):
            return operands[0] if operands else []
        if self.predict and op == "custom-call" and inst.custom_call_target in VIEWS_BEFORE_PARTITIONING:
            # Not partitioned yet: a shard_map's entry or exit is a view of its operand's buffer (counted as
            # new, a shard_map's local view of its weights was a second copy of every one of them). A
            # `Sharding` constraint is not: the partitioner turns it into a copy, a resharding when it
            # differs, and forwarding it took decode steps' figures 26-53% under the compiler's.
            if inst.shape is not None and inst.shape.is_tuple and len(operands) > 1:
                return list(operands)
            return operands[0] if operands else []
        placement = _host_placement(inst)
        if placement is not None:
            return self._placement(comp, inst, operands, placement)
        if op == "copy-start":
            src = operands[0] if operands else []
            self._use(src)
            dest = self._new(inst, comp, inst.shape.tuple_shapes[0]) if inst.shape and inst.shape.is_tuple else []
            return [dest, src, []]
        if op == "async-start" or (op.endswith("-start") and _is_async_tuple(inst.shape, len(operands))):
            return self._async_start(comp, inst, operands)
        if op == "async-done" or (op.endswith("-done") and op != "copy-done"):
            src = operands[0] if operands else []
            self._use(src)
            return src[1] if isinstance(src, list) and len(src) > 1 else src
        if op in ("dynamic-update-slice", "scatter") and operands:
            return self._in_place(comp, inst, operands)
        fusible = op in CHEAP or _outer_product(inst)
        if self.predict and fusible and not self._kept_for_later(comp, inst, operands):
            deps = frozenset(v for t in operands for v in self._leaves(t))
            if op == "convert" and self.invariants:
                deps = self._hoist_convert(inst, deps)
            return Virtual(inst, comp, inst.shape, here, deps)
        for t in operands:
            if self.predict and (op in ("custom-call", "sort", "all-reduce", "all-gather", "all-to-all")
                                 or op == "topk" and _sorted_topk(comp.operand_shape(inst, 0), inst)):
                self._use(self._materialize(t))
            else:
                self._use(t)
        shared = self._shared_operand(comp, inst, operands) if op != "sort" else self._sorted_in_place(comp, inst, operands)
        if shared is not None:
            return shared
        shape = self._output_fused_shape(comp, inst) if self.predict and op == "dot" else inst.shape
        if self.predict and op == "topk" and operands:
            self._sort_of_topk(comp, inst, operands[0], here)
        tree = self._new(inst, comp, shape) if shape is not None else []
        if op == "constant":
            self.constant_ids.update(self._leaves(tree))
        elif op == "copy" and operands:
            for vid in self._leaves(tree):
                self.copy_reads[vid] = frozenset(self._leaves(operands[0]))
        return tree

    def _sort_of_topk(self, comp: Computation, inst: Instruction, operand: Tree, here: int) -> None:
        """The TPU compiler turns a top-k it cannot give its TopK kernel (operands of rank 3 or more, or a row
        not much longer than k) into a sort of the whole operand beside an s32 iota, then slices k: two
        operand-sized buffers for the sort's outputs, live while it runs (a kNN memory's top-32 of
        f32[16, 16, 2048, 32768] scores held 3 x 16G per device on v6e, sharded10)."""
        shape = comp.operand_shape(inst, 0)
        if not _sorted_topk(shape, inst):
            return
        leaves = self._leaves(operand)
        split = self.values[leaves[0]].split if leaves else None
        for element in (shape.element_type, "s32"):
            vid = self._new(inst, comp, Shape(element, shape.dims), split or WHOLE)
            self.values[vid].last_use = here

    def _output_fused_shape(self, comp: Computation, inst: Instruction) -> Shape | None:
        """A dot's shape as XLA's output fusion writes masked scores: when the elementwise chain that alone
        reads the dot (transpose, convert, scale) applies a mask (a select, or jax's `_where` call) and ends
        at a value a reduce and others read (a softmax's max and subtract), the buffer is that value's, in its
        element type. Causal-masked f32 scores of bf16 dots were such a buffer in the compiled train steps of
        sharded1 and sharded7 (the dot, convert, scale and select one fusion); the unmasked scores of the v7x
        diffusion sampler (sharded7) stayed the dot's bf16, fused with their max instead."""
        shape = inst.shape
        if shape is None or not shape.is_array:
            return shape
        end, masked = inst, False
        while True:
            readers = self._readers(comp, end.name)
            nxt = readers[0] if len(readers) == 1 else None
            if nxt is not None and nxt.opcode == "call":
                call = nxt
                nxt, selects = self._masking_call_output(comp, call, end.name)
                if nxt is None and self.keep_masked_scores:
                    nxt = selects = self._masked_per_example(comp, call, end.name)
                masked |= bool(selects)
            elif nxt is not None and nxt.opcode in OUTPUT_FUSED:
                masked |= _applies_mask(comp, nxt)
            else:
                nxt = None
            if nxt is None or nxt.shape is None or not nxt.shape.is_array or math.prod(nxt.shape.dims) != math.prod(shape.dims):
                break  # `readers` are the chain end's
            end = nxt
        if (not masked or len(readers) < 2 or element_bits(end.shape) <= element_bits(shape)
                or not any(r.opcode == "reduce" for r in readers)):
            return shape
        self.kept_scores += end.opcode == "call"
        return Shape(end.shape.element_type, shape.dims, shape.dynamic, shape.layout)

    def _masked_per_example(self, comp: Computation, call: Instruction, name: str) -> Instruction | None:
        """jax's `_where` returning the select itself, masking operand `name` by a predicate that differs
        per example (its dims other than the last two are not all 1: padding or prompt lengths, not a causal
        mask): `call`, else None. The compiled prefill and best-of-n steps kept such f32 scores
        (f32[24,4,4,4096,5121] twice on v5p, sharded19), where causally masked scores of the same programs
        stayed the dot's bf16 (yoco's [.., 4096, 4096] beside its kept [.., 4096, 4608], sharded19)."""
        callee, param = self._called_with(call, name)
        if callee is None or callee.root.opcode != "select" or not _applies_mask(callee, callee.root):
            return None
        if param is None or param.name not in callee.root.operand_names[1:]:
            return None
        predicate = next((comp.operand_shape(call, k) for k, p in callee.parameter_instructions.items()
                          if p.shape is not None and p.shape.element_type == "pred"), None)
        if predicate is None or not predicate.is_array or math.prod(predicate.dims[:-2]) <= 1:
            return None
        return call

    def _masking_call_output(self, comp: Computation, call: Instruction, name: str) -> tuple[Instruction | None, bool]:
        """jax's `_where` as a call: the get-tuple-element of `call` whose value masks the operand `name`, and
        whether one was found."""
        callee, param = self._called_with(call, name)
        if callee is None or callee.root.opcode != "tuple" or param is None:
            return None, False
        for k, op in enumerate(callee.root.operands):
            elem = callee.by_name.get(op.name or "")
            if elem is not None and _applies_mask(callee, elem) and param.name in elem.operand_names:
                gtes = [r for r in self._readers(comp, call.name)
                        if r.opcode == "get-tuple-element" and r.attr("index") == str(k)]
                return (gtes[0], True) if len(gtes) == 1 else (None, False)
        return None, False

    def _called_with(self, call: Instruction, name: str) -> tuple[Computation | None, Instruction | None]:
        """The computation `call` applies, and its parameter that receives the operand `name` (None when absent)."""
        callee = self._callee(call.attr("to_apply"))
        if callee is None:
            return None, None
        number = next((k for k, op in enumerate(call.operands) if op.name == name), None)
        return callee, callee.parameter_instructions.get(number) if number is not None else None

    def _hoist_convert(self, inst: Instruction, deps: frozenset[int]) -> frozenset[int]:
        """A convert of (a slice of) a loop-invariant array: XLA converts the whole array once, before the
        outermost loop, and every loop reading the same array shares that copy."""
        big = [v for v in deps if self.values[v].bytes > 4096]
        if len(big) != 1 or inst.shape is None or not inst.shape.is_array:
            return deps
        leaf = big[0]
        starts = [start for start, ids in self.invariants if leaf in ids]
        src = self.values[leaf]
        # Seen in the oracle: XLA converts loop-invariant *entry parameters* (weights) once, outside the
        # loops, but not loop-invariant temporaries (a scan's residual stack), and never widens (bf16 -> f32).
        if not starts or leaf not in self.param_roots or element_bits(inst.shape) >= element_bits(src.shape):
            return deps
        # Buffers merge as the walk goes on, so match earlier hoists by their current representative.
        root = self.uf.find(leaf)
        key = next((k for k in self.hoisted if k[1] == inst.shape.element_type and self.uf.find(k[0]) == root),
                   (leaf, inst.shape.element_type))
        if key not in self.hoisted:
            saved = self.position
            self.position = min(starts)
            shape = Shape(inst.shape.element_type, src.shape.dims, src.shape.dynamic, src.shape.layout)
            self.hoisted[key] = self._new(inst, self.module.entry, shape, src.split or WHOLE)
            self.position = saved
        hoisted = self.hoisted[key]
        self._use(leaf, self.values[hoisted].define)
        return deps - {leaf} | {hoisted}

    def _clone_constants(self, slots: list, fresh: set[int], sunk: set[int] = frozenset()) -> list:
        """Loop state initialised from a broadcast constant (zeros for accumulators): XLA clones the
        broadcast next to each loop instead of keeping one buffer alive from its first use. Slots the body
        only reads (`sunk`) are left to while-loop constant sinking (`_materialize_state`)."""
        out = []
        for k, t in enumerate(slots):
            if k not in sunk and self._sinkable(t):
                t = self._new(t.inst, t.comp, t.shape)
                fresh.add(k)
            out.append(t)
        return out

    def _copy_shared_state(self, comp: Computation, inst: Instruction, body: Computation, init: Tree,
                           fresh: set[int] = frozenset()) -> Tree:
        """XLA's copy insertion: a loop-state element the body updates gets its own buffer when its initial
        buffer also sits in another state slot (one zeros broadcast for two accumulators) or is an entry
        parameter; prediction mode only (a scheduled dump shows the copies)."""
        if not isinstance(init, list):
            return init
        invariant = self._invariant_slots(body, len(init))
        shared = self._shared_init_slots(comp, inst)
        seen: set[int] = set()
        out = []
        for k, slot in enumerate(init):
            if isinstance(slot, int) and k not in invariant and k not in fresh:
                root = self.uf.find(slot)
                if root in seen or slot in self.param_roots or k in shared:
                    slot = self._new(inst, comp, self.values[slot].shape, self.values[slot].split or WHOLE)
                    self._use(init[k])
                seen.add(self.uf.find(slot))
            out.append(slot)
        return out

    def _relaid_weight_stacks(self, body: Computation, init: Tree) -> list[int]:
        """Copies of 16-bit weight stacks re-tiled for the dots of a layer loop (prediction mode, on a generation
        whose dot operands take more sublanes than the (8,128)(2,1) tiles jax passes parameters in: v7x). An
        entry parameter the body only reads and slices a matrix from each iteration is copied whole before the
        loop, and the copy lives until the loop ends; a later loop over the same parameter reads the same copy.
        A donated parameter is left alone: its buffer becomes an output's (KV caches, ZeRO's bf16 parameters:
        the compiled programs keep their layout or re-tile them where the peak is not).
        """
        gen = GENERATIONS.get(canonical_name(self.generation or "") or "")
        if gen is None or gen.dot_operand_sublanes_16bit <= 8 or not isinstance(init, list):
            return []
        out = []
        for k in self._invariant_slots(body, len(init)):
            slot = init[k]
            if not (isinstance(slot, int) and slot in self.param_roots and slot not in self.donated
                    and _weight_stack(self.values[slot].shape) and self._slices_each_iteration(body, k)):
                continue
            if slot not in self.relaid:
                param = self.values[slot]
                copy = self.uf.add()
                self.values.append(Value(copy, param.inst, param.comp, param.shape, param.bytes, param.space,
                                         self.position, split=param.split, index=param.index))
                self.relaid[slot] = copy
            out.append(self.relaid[slot])
        return out

    def _slices_each_iteration(self, body: Computation, k: int) -> bool:
        """Whether the loop body reads state slot `k` through a dynamic-slice (directly, or in a computation it
        calls with that slot, as jax's `dynamic_index_in_dim` does)."""
        param = body.parameter_instructions.get(0)
        if param is None:
            return False
        names = {i.name for i in self._readers(body, param.name)
                 if i.opcode == "get-tuple-element" and i.attr("index") == str(k)}
        for inst in (r for name in names for r in self._readers(body, name)):
            used = [n for n, op in enumerate(inst.operands) if op.name in names]
            if inst.opcode == "dynamic-slice" and 0 in used:
                return True
            callee = self._callee(inst.attr("to_apply")) if inst.opcode == "call" else None
            if callee is not None and any(_dynamic_slices_parameter(callee, n) for n in used):
                return True
        return False

    def _kept_for_later(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> bool:
        """An expensive elementwise value read by two or more instructions gets a buffer of its own unless XLA
        duplicates it into each reader; so does an interleaving pad."""
        if inst.opcode in EXPENSIVE and self._users(comp, inst.name) > 1:
            return not self._duplicated(comp, inst, operands)
        return _interleaving(inst)

    def _duplicated(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> bool:
        """XLA recomputes an expensive producer in each fusion that reads it only when every reader can fuse
        it and recomputing reads less than keeping it would write (it widens: the buffers it is computed from
        are smaller than its own). A softmax's f32 exp of bf16 scores was recomputed in its sum and in its divide
        (exponential twice in the compiled v7x diffusion sampler of fixtures/oracle_new/sharded7, no
        [.., 16384, 16384] f32 buffer); the exp of f32 scores in a train step's forward was one fusion's
        second output, read by the divide (sharded7 v5p mod_8b), as was the exp of f32 logits returned in a
        tuple for the backward pass (sharded3 qwen)."""
        if inst is comp.root or any(r.opcode not in FUSING_READERS for r in self._readers(comp, inst.name)):
            return False
        if inst.shape is None or not inst.shape.is_array:
            return False
        split = self.splits.get((comp.name, inst.name)) if self.splits is not None else None
        own = self._device_bytes(inst.shape, split)
        read = sum(self.values[v].bytes for v in {v for t in operands for v in self._leaves(t)})
        return read < own

    def _readers(self, comp: Computation, name: str) -> list[Instruction]:
        """The instructions of `comp` that read the value `name` (each once)."""
        readers = self.readers.get(comp.name)
        if readers is None:
            readers = {}
            for other in comp.instructions:
                for operand in set(other.operand_names):
                    readers.setdefault(operand, []).append(other)
            self.readers[comp.name] = readers
        return readers.get(name, [])

    def _users(self, comp: Computation, name: str) -> int:
        """How many instructions of `comp` read the value `name`."""
        return len(self._readers(comp, name))

    def _shared_init_slots(self, comp: Computation, inst: Instruction) -> set[int]:
        """Slots of the while's init tuple whose value other instructions also read: the loop must not
        update that buffer in place."""
        tup = comp.by_name.get(inst.operands[0].name or "") if inst.operands else None
        if tup is None or tup.opcode != "tuple":
            return set()
        return {k for k, op in enumerate(tup.operands) if self._users(comp, op.name or "") > 1}

    def _invariant_slots(self, body: Computation, n: int) -> set[int]:
        root = body.root
        param = body.parameter_instructions.get(0)
        if root.opcode != "tuple" or param is None:
            return set()
        out = set()
        for k, op in enumerate(root.operands[:n]):
            elem = body.by_name.get(op.name or "")
            if (elem is not None and elem.opcode == "get-tuple-element" and elem.operands
                    and elem.operands[0].name == param.name and elem.attr("index") == str(k)):
                out.add(k)
        return out

    def _invariant_leaves(self, body: Computation, init: Tree) -> set[int]:
        """Leaves of the loop state the body passes through unchanged (root element k = gte(param, k))."""
        root = body.root
        params = body.parameter_instructions
        param = params.get(0)
        if root.opcode != "tuple" or param is None or not isinstance(init, list):
            return set()
        out: set[int] = set()
        for k, op in enumerate(root.operands):
            elem = body.by_name.get(op.name or "")
            if (elem is not None and elem.opcode == "get-tuple-element" and elem.operands
                    and elem.operands[0].name == param.name and elem.attr("index") == str(k) and k < len(init)):
                out.update(self._leaves(init[k]))
        return out

    def _async_start(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree:
        """((operands), output, context): {0} are the operands' own buffers, {1} is the new result."""
        for t in operands:
            self._use(self._materialize(t))
        shape = inst.shape
        if shape is None or not shape.is_tuple or len(shape.tuple_shapes) < 2:
            return self._new(inst, comp, shape) if shape is not None else []
        return [list(operands), self._new(inst, comp, shape.tuple_shapes[1]), []]

    def _placement(self, comp: Computation, inst: Instruction, operands: list[Tree], placement: str) -> Tree:
        src = self._materialize(operands[0]) if operands else []
        self._use(src)
        # An offloaded argument copied to the device: XLA turns the move into an async copy its scheduler may
        # start anywhere from the program's start to this use (`hoist_host_copies`).
        host_copy = placement == "device" and self.predict and self._host_argument(src)
        self.host_copies += host_copy
        saved = self.position
        if host_copy and self.hoist_host_copies:
            self.position = 0
        tree = self._new(inst, comp, inst.shape)
        self.position = saved
        if host_copy:
            self._use(tree)
        if placement == "host":
            for vid in self._leaves(tree):
                self.values[vid].host = True
        return tree

    def _host_argument(self, tree: Tree) -> bool:
        leaves = self._leaves(tree)
        return bool(leaves) and all(v in self.param_roots and self.values[v].host for v in leaves)

    def _in_place(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree:
        """dynamic-update-slice/scatter write into operand 0's buffer; a host update makes it a host buffer."""
        first = operands[0]
        if (inst.opcode == "scatter" and isinstance(first, Virtual) and first.inst.opcode == "broadcast"
                and self.predict and _one_update_per_batch(comp, inst)):
            # A scatter into a broadcast constant of one update per batch element (the transpose of
            # take_along_axis): XLA rewrites it as a one-hot select, which fuses into its consumer like any
            # elementwise op. Many updates per batch element (an embedding table's gradient, rows of every
            # token added into zeros) are a real scatter with a buffer of the table's size: DLRM's 26
            # row-sharded tables (1.62G per device) had no gradient at all, -68%.
            deps = frozenset(v for t in operands for v in self._leaves(t))
            return Virtual(inst, comp, inst.shape, self.position, deps)
        target = self._materialize(operands[0])
        for t in operands:
            self._use(t)
        update = operands[2 if inst.opcode == "scatter" else 1] if len(operands) > 1 else []
        # The update may reach the DUS through fused reshapes/broadcasts: a host-annotated value among its
        # inputs makes the target a host buffer (XLA's host offloader moves the whole stacked array).
        if any(self.values[v].host for v in self._leaves(update)):
            for vid in self._leaves(target):
                self.values[vid].host = True
        if isinstance(target, list) or not self._leaves(target):
            return self._new(inst, comp, inst.shape)
        return target

    def _shared_operand(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree | None:
        """Fusions/custom calls whose output is written in place into an operand (XLA's buffer sharing)."""
        if inst.opcode not in ("fusion", "custom-call"):
            return None
        # `output_to_operand_aliasing` has input_output_alias's syntax: {output index}: (operand, {operand index}).
        aliased = parse_aliases(inst.attr("output_to_operand_aliasing"))
        if aliased and inst.shape is not None and inst.shape.is_tuple:
            return self._aliased_fusion_outputs(comp, inst, operands, aliased)
        if inst.opcode == "custom-call":
            # a kernel's input_output_aliases: its one output is written into that operand's buffer
            whole = [a for a in aliased if a.output_index == () and a.parameter < len(operands)]
            source = _subtree(operands[whole[0].parameter], whole[0].parameter_index) if whole else None
            return source if isinstance(source, int) else None
        called = self._callee((parse_name_list(inst.attr("calls")) or [""])[0])
        if called is None:
            return None
        before = len(self.values)
        result = _fusion_in_place(called, operands, lambda: self._new(inst, comp, inst.shape))
        if result is not None:
            kept = set(self._leaves(result))
            for value in self.values[before:]:
                if value.id not in kept:
                    value.bytes = 0  # a fresh leaf the in-place parts replaced
        return result

    def _sorted_in_place(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree | None:
        """A sort writes each sorted array into its operand's buffer when the sort is that operand's only reader
        (XLA's dataflow analysis lets a sort share an operand's buffer then): output k is operand k. Counted as
        new, a sparse autoencoder's top-k by a sort of [2097152, 512] f32 scores and s32 indices held four 4G
        buffers at the compiled step's peak instead of two (fixtures/oracle_new/sharded12: +22%, +37%). Only when
        the operand's buffer has the output's shape and layout: a DeBERTa step's sort of a bitcast from
        [28672, 4, 8, 128] (4,128)-tiled to [117440512] wrote new buffers."""
        leaves = []
        outputs = inst.shape.tuple_shapes if inst.shape is not None and inst.shape.is_tuple else (inst.shape,)
        for k, tree in enumerate(operands):
            name = inst.operands[k].name if k < len(inst.operands) else None
            if not isinstance(tree, int) or name is None or self._users(comp, name) != 1 \
                    or tree in self.param_roots or tree in self.constant_ids or k >= len(outputs) \
                    or not _same_buffer_shape(self.values[tree].shape, outputs[k]):
                return None
            leaves.append(tree)
        if not leaves:
            return None
        return leaves[0] if len(leaves) == 1 and (inst.shape is None or not inst.shape.is_tuple) else leaves

    def _aliased_fusion_outputs(self, comp: Computation, inst: Instruction, operands: list[Tree],
                                aliased: list[Alias]) -> Tree:
        """A tuple-shaped fusion whose `output_to_operand_aliasing` names outputs written into operands' buffers
        (libtpu's async collective fusions hand the gathered buffer on from start to continuation to done):
        those outputs are the operands' buffers, the others are new. Counted as new, a Whisper step's 2.78G
        gathered logits were three buffers at the after-optimization peak (+50% over XLA's figure)."""
        tree = self._new(inst, comp, inst.shape)
        if not isinstance(tree, list):
            return tree
        for alias in aliased:
            out = alias.output_index
            if len(out) != 1 or not 0 <= out[0] < len(tree) or alias.parameter >= len(operands):
                continue
            source = _subtree(operands[alias.parameter], alias.parameter_index)
            if not isinstance(source, int) or not isinstance(tree[out[0]], int):
                continue
            self.values[tree[out[0]]].bytes = 0  # the fresh leaf the operand's buffer replaces
            tree[out[0]] = source
        return tree

    def _control(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree:
        """while/conditional/call: the called computations run here, their parameters alias the operands."""
        op = inst.opcode
        if op == "while":
            fresh: set[int] = set()
            cond = self._callee(inst.attr("condition"))
            body = self._callee(inst.attr("body"))
            sunk: set[int] = set()
            if self.predict and operands and isinstance(operands[0], list):
                sunk = self._invariant_slots(body, len(operands[0])) if body is not None else set()
                operands = [self._clone_constants(operands[0], fresh, sunk)] + operands[1:]
            init = self._materialize_state(operands[0], sunk) if operands else []
            self._use(init)
            if cond is not None:
                self._computation(cond, {0: init})
            relaid: list[int] = []
            if body is not None and self.predict:
                init = self._copy_shared_state(comp, inst, body, init, fresh)
                relaid = self._relaid_weight_stacks(body, init)
            result = init
            loop_start = self.position
            if body is not None:
                if self.predict:
                    self.invariants.append((self.position, self._invariant_leaves(body, init)))
                out = self._computation(body, {0: init})
                out = ([o if isinstance(o, Virtual) and isinstance(init, list) and k < len(init) and o is init[k]
                        else self._materialize(o) for k, o in enumerate(out)]
                       if isinstance(out, list) else self._materialize(out))
                if self.predict:
                    self.invariants.pop()
                self._use(out)
                self._union_trees(init, out)
            self.positions.append((comp, inst))
            self.position += 1
            self._use(relaid)
            self.loops.append((loop_start, self.position, self._leaves(result)))
            return result
        if op == "call":
            callee = self._callee(inst.attr("to_apply"))
            if callee is None or callee.execution_thread not in (None, "main"):
                return self._opaque(comp, inst, operands)
            return self._computation(callee, dict(enumerate(operands)))
        branches = [self._callee(n) for n in inst.branch_names]
        self._use(operands[0] if operands else [])
        out = None
        for i, branch in enumerate(branches):
            if branch is None:
                continue
            arg = self._materialize(operands[i + 1]) if i + 1 < len(operands) else []
            result = self._materialize(self._computation(branch, {0: arg}))
            if out is None:
                self.positions.append((comp, inst))
                self.position += 1
                out = self._new(inst, comp, inst.shape)
            self._use(result)
            self._union_trees(out, result)
        return out if out is not None else self._opaque(comp, inst, operands)

    def _materialize_state(self, state: Tree, invariant: set[int]) -> Tree:
        """A loop's initial state in buffers, except what XLA's while-loop constant sinking moves into the
        body: a broadcast of a small value (a mask, -inf) in a slot the body only reads (`invariant`), which
        then fuses there."""
        if not (self.predict and isinstance(state, list)):
            return self._materialize(state)
        return [t if k in invariant and self._sinkable(t) else self._materialize(t) for k, t in enumerate(state)]

    def _sinkable(self, tree: Tree) -> bool:
        return (isinstance(tree, Virtual) and tree.inst.opcode in ("broadcast", "iota", "constant")
                and all(self.values[v].bytes <= 4096 for v in tree.deps))

    def _opaque(self, comp: Computation, inst: Instruction, operands: list[Tree]) -> Tree:
        self.positions.append((comp, inst))
        self.position += 1
        for t in operands:
            self._use(self._materialize(t))
        return self._new(inst, comp, inst.shape)

    # ------------------------------------------------------------------------------------------ lives

    def _lives(self, end: int) -> Simulation:
        groups: dict[int, list[Value]] = {}
        for v in self.values:
            groups.setdefault(self.uf.find(v.id), []).append(v)
        params = {self.uf.find(v) for v in self.param_roots}
        outputs = {self.uf.find(v) for v in self.output_roots}
        constants = {self.uf.find(v) for v in self.constant_ids}
        lives = []
        hosts: list[donated.Host] = []
        for root, members in groups.items():
            named = min(members, key=lambda v: v.define)
            size = self._group_bytes(members)
            start = min(v.define for v in members)
            stop = max(max(v.last_use, v.define) for v in members)
            if any(v.host or v.space == HOST_SPACE for v in members):
                role = "host"
            elif any(v.space != HBM_SPACE for v in members):
                role = "other-space"
            elif root in params:
                role = "parameter"
            elif root in outputs:
                role = "output"
            elif root in constants:
                role = "constant"
            else:
                role = "temp"
            lives.append(BufferLife(root, size, start, stop, named, role))
            if (role == "output" or (role == "parameter" and root in outputs)) and not self.predict:
                hosts.append(donated.Host(size, [(v.define, max(v.last_use, v.define)) for v in members],
                                          frozenset(v.id for v in members)))
        self._place_in_argument_and_output_buffers(lives, groups, hosts)
        temps = [b for b in lives if b.role == "temp"]
        budget = vmem_for_temporaries(self.generation) if self.predict else 0
        peak, at = _peak(temps, budget)
        if not self.predict:
            # A scheduled module's temporaries sit at fixed offsets in XLA's heap: the holes count too.
            heap = packed_heap_bytes(Interval(b.start, b.end, b.bytes) for b in temps)
            peak = max(peak, heap or 0)
        return Simulation(lives, peak, at, self.positions, self.host_copies, self.kept_scores)

    def _group_bytes(self, members: list[Value]) -> int:
        """A merged buffer's size: its largest member's, or in a prediction the entry argument's it holds (sized
        with the layout entry_computation_layout gives it). What is written into a donated argument takes the
        argument's layout; a guessed layout for it can pad more: a Mamba-2 step's f32[48, 2048, 2128] weight shards
        are {1,2,0} (no padding), and its AdamW updates guessed row-major padded 2128 to 2176 lanes, +54 MiB on
        each of three arguments (fixtures/oracle_new/sharded12)."""
        if self.predict:
            arguments = [v.bytes for v in members if v.id in self.param_roots]
            if arguments:
                return max(arguments)
        return max(v.bytes for v in members)

    def _place_in_argument_and_output_buffers(self, lives: list[BufferLife], groups: dict[int, list[Value]],
                                              hosts: list[donated.Host]) -> None:
        """Temporaries that fit a donated argument's or an output's buffer while it is empty live there, not
        in the heap (a scheduled module only: XLA's buffer assignment)."""
        if not hosts:
            return
        temps = [b for b in lives if b.role == "temp" and b.bytes]
        placed = donated.placed_in_hosts(
            [donated.Temp(b.start, b.end, b.bytes, self._copied_values(groups[b.root])) for b in temps], hosts)
        for i in placed:
            temps[i].role = "in-argument-or-output"

    def _copied_values(self, members: list[Value]) -> frozenset[int]:
        """The values the copies among `members` read (their operands' leaves)."""
        return frozenset(vid for v in members for vid in self.copy_reads.get(v.id, ()))


def _sorted_topk(shape: Shape | None, inst: Instruction) -> bool:
    """Whether a top-k is compiled as a whole sort (measured on the TPU compiler's dumps: rank >= 3 always,
    [16, 2048] k=256 and [2048, 400] k=100 too; [256, 32000] k=4 and [2048, 2097152] k=100 use TopK, which
    fuses its operand's producer)."""
    if shape is None or not shape.is_array or not shape.dims:
        return False
    k = int(inst.attr("k", "0") or 0)
    return len(shape.dims) >= 3 or shape.dims[-1] <= 8 * max(k, 1)


def _compiled_layout(shape: Shape | None, layout: Shape) -> Shape | None:
    """An entry parameter sized with the tiled layout `entry_computation_layout` gives it (jax's before-optimisation
    dumps print untiled parameters; a [768, 1000] f32 weight the compiler lays out {0,1} pads nothing, guessed
    row-major its minor 1000 was padded to 1024), its memory space left as the instruction says (host leaves
    are marked apart)."""
    if shape is None or layout is None:
        return shape
    if shape.is_tuple and layout.is_tuple and len(shape.tuple_shapes) == len(layout.tuple_shapes):
        return Shape(shape.element_type, shape.dims, shape.dynamic, shape.layout,
                     tuple(_compiled_layout(s, l) for s, l in zip(shape.tuple_shapes, layout.tuple_shapes)))
    if (not shape.is_array or not layout.is_array or shape.dims != layout.dims or layout.layout is None
            or not layout.layout.tiles):
        return shape
    space = shape.layout.memory_space if shape.layout is not None else 0
    return with_layout(shape, replace(layout.layout, memory_space=space))


def _is_async_tuple(shape: Shape | None, n_operands: int) -> bool:
    """An async-start style result: a tuple whose first element is the tuple of the operands."""
    return (shape is not None and shape.is_tuple and len(shape.tuple_shapes) >= 2
            and shape.tuple_shapes[0].is_tuple and len(shape.tuple_shapes[0].tuple_shapes) == n_operands)


def _peak(buffers: list[BufferLife], vmem_budget: int = 0) -> tuple[int, int]:
    """The largest HBM total of live temporaries and where it happens (the first position it is reached)."""
    best = at = 0
    for pos, hbm in live_temporaries(buffers, vmem_budget):
        if hbm > best:
            best, at = hbm, pos
    return best, at


def live_temporaries(buffers: Iterable[BufferLife], vmem_budget: int = 0) -> Iterator[tuple[int, int]]:
    """(position, HBM bytes of live temporaries from there on) at every position where it changes; a buffer
    counts from its start to its end inclusive.

    With a VMEM budget (prediction only: XLA's memory-space assignment has not run yet), the smallest live
    buffers at each point are taken as kept in VMEM, up to the budget, and do not count.
    """
    events: list[tuple[int, int]] = []
    for b in buffers:
        if b.bytes:
            events.append((b.start, b.bytes))
            events.append((b.end + 1, -b.bytes))
    events.sort(key=lambda e: (e[0], e[1]))
    live = 0
    sizes: list[int] = []
    for i, (pos, delta) in enumerate(events):
        live += delta
        if vmem_budget:
            if delta > 0:
                bisect.insort(sizes, delta)
            else:
                del sizes[bisect.bisect_left(sizes, -delta)]
        if i + 1 < len(events) and events[i + 1][0] == pos:
            continue  # settle every event at this position first
        yield pos, live - _absorbed(sizes, vmem_budget) if vmem_budget else live


def _absorbed(sizes: list[int], budget: int) -> int:
    taken = 0
    for size in sizes:
        if taken + size > budget:
            break
        taken += size
    return taken


def _subtree(tree: Tree, index: tuple[int, ...]) -> Tree | None:
    for i in index:
        if not isinstance(tree, list) or i >= len(tree):
            return None
        tree = tree[i]
    return tree


def _fusion_in_place(called: Computation, operands: list[Tree], fresh) -> Tree | None:
    """A fusion whose root (or root tuple element) is a dynamic-update-slice/scatter of a fusion parameter
    updates that operand's buffer in place (XLA's CanShareBuffer)."""
    by_name = called.by_name

    def param_of(inst: Instruction) -> int | None:
        while inst.opcode == "bitcast" and inst.operands:
            inst = by_name.get(inst.operands[0].name or "", inst)
            if inst.opcode == "bitcast" and not inst.operands:
                break
        return inst.parameter_number if inst.opcode == "parameter" else None

    def in_place(inst: Instruction) -> int | None:
        if inst.opcode in ("dynamic-update-slice", "scatter") and inst.operands:
            src = by_name.get(inst.operands[0].name or "")
            return param_of(src) if src is not None else None
        return None

    root = called.root
    if root.opcode != "tuple":
        k = in_place(root)
        if k is not None and k < len(operands) and isinstance(operands[k], int):
            return operands[k]
        return None
    targets = []
    for op in root.operands:
        elem = by_name.get(op.name or "")
        k = in_place(elem) if elem is not None else None
        targets.append(k if k is not None and k < len(operands) and isinstance(operands[k], int) else None)
    if all(k is None for k in targets):
        return None
    fresh_tree = fresh()
    return [operands[k] if k is not None else (fresh_tree[i] if isinstance(fresh_tree, list) else [])
            for i, k in enumerate(targets)]


def simulate(module: Module, predict: bool, generation: str | None = None,
             hoist_host_copies: bool = False, keep_masked_scores: bool = True) -> Simulation:
    """`hoist_host_copies`: device copies of host-memory arguments start at the program's start, not at
    their first use (prediction only; the two bound what XLA's scheduler does). `keep_masked_scores`: scores
    masked per example stay f32 buffers (off: XLA rematerialised them into their readers)."""
    return Simulator(module, predict, generation, hoist_host_copies, keep_masked_scores).run()


def vmem_for_temporaries(tpu: str | None) -> int:
    """VMEM the generation's memory-space assignment fills with temporaries; 0 for an unknown generation."""
    name = canonical_name(tpu or "")
    return GENERATIONS[name].vmem_for_temporaries if name else 0


def _same_buffer_shape(a: Shape | None, b: Shape | None) -> bool:
    """The same dims and, where both print one, the same layout (tiles included)."""
    if a is None or b is None or not a.is_array or not b.is_array or tuple(a.dims) != tuple(b.dims):
        return False
    return a.layout is None or b.layout is None or a.layout == b.layout


def _weight_stack(shape: Shape) -> bool:
    """A stack of 16-bit arrays of rank two or more (a layer loop's weight matrices, a read-only attention
    cache) not already in 16-row tiles."""
    if not shape.is_array or element_bits(shape) != 16 or len(shape.dims) < 3:
        return False
    tiles = shape.layout.tiles if shape.layout is not None else ()
    return not tiles or tuple(tiles[0].dims)[:1] != (16,)


def _dynamic_slices_parameter(comp: Computation, number: int) -> bool:
    param = comp.parameter_instructions.get(number)
    return param is not None and any(i.opcode == "dynamic-slice" and i.operands and i.operands[0].name == param.name
                                     for i in comp.instructions)


def _dot_minor_dims(inst: Instruction, shape: Shape) -> tuple[int, ...]:
    """The dims XLA's layout assignment puts minor in a dot's result: its two largest free (non-batch) dims,
    when both fill a vreg's 128 lanes. Attention scores [b, h, 197, 197] were laid out {3,2,1,0} and padded to
    [.., 200, 256] in the compiled CLIP and graphormer steps (fixtures/oracle_new/sharded5, sharded7), where the
    cheapest order of `leaf_bytes` pads nothing (graphormer -9% -> +1%). A free dim under 128 is not put minor
    (a Mamba [b, l, 3072, 16] projection kept 3072 minor: with 16 minor, +2% -> +56%): () leaves the choice
    to `leaf_bytes`."""
    if inst.opcode != "dot" or not shape.is_array or len(shape.dims) < 2:
        return ()
    batch = len(parse_int_list(inst.attr("lhs_batch_dims")) or [])
    free = range(batch, len(shape.dims))  # a dot's result is its batch dims, then the free ones
    if len(free) < 2:
        return ()
    minor = sorted(free, key=lambda d: (-shape.dims[d], -d))[:2]
    if min(shape.dims[d] for d in minor) < 128:
        return ()
    return tuple(sorted(minor))


def _applies_mask(comp: Computation, inst: Instruction) -> bool:
    """A select by a broadcast predicate (an attention mask of fewer dims), not by a comparison of the value
    itself (a ReLU's derivative)."""
    if inst.opcode != "select" or not inst.operands:
        return False
    pred = comp.by_name.get(inst.operands[0].name or "")
    return pred is not None and pred.opcode == "broadcast"


def _interleaving(inst: Instruction) -> bool:
    """A pad with interior padding: the re-interleave of the even and odd halves at each level of
    lax.associative_scan. XLA gives it a buffer (the compiled Mamba steps kept the pads of every level, 768M
    each on v6e); counted as fused, a Mamba train step was -66% (strided slices kept too: +32%, over)."""
    if inst.opcode != "pad":
        return False
    return any(len(low_high_interior) == 3 and low_high_interior[2] not in ("0", "")
               for low_high_interior in (d.split("_") for d in (inst.attr("padding") or "").split("x")))


def _one_update_per_batch(comp: Computation, inst: Instruction) -> bool:
    """Whether a scatter's indices name one window per batch element (`scatter_indices_batching_dims`):
    every index dim other than the index vector and the batching dims has size 1."""
    indices = comp.operand_shape(inst, 1)
    if indices is None or not indices.is_array:
        return True
    vector_dim = int(inst.attr("index_vector_dim") or len(indices.dims))
    batching = set(parse_int_list(inst.attr("scatter_indices_batching_dims")) or [])
    return math.prod(d for k, d in enumerate(indices.dims) if k != vector_dim and k not in batching) == 1


def _outer_product(inst: Instruction) -> bool:
    """A dot that contracts nothing is a broadcast-multiply: XLA's algebraic simplifier rewrites it so, and it
    fuses into its readers like any elementwise op. Counted as a buffer of its own, a capsule network's
    prediction vectors (an outer product per capsule pair) took its train steps to +131..+159% of the compiler's
    figure before optimization, -22..-10% with this (a held-out set of 2026-12-05 whose dumps did not land)."""
    raw = inst.attr("lhs_contracting_dims")
    return inst.opcode == "dot" and (raw is None or parse_int_list(raw) == [])


def _ready_order(comp: Computation) -> list[Instruction]:
    """The computation's instructions with each shrinking one (a dot, reduce or convolution whose result is at
    most half its largest operand) moved up to just after its last operand, as XLA's memory-aware scheduler
    places it to free what it reads. The text is a post-order from the ROOT, which puts the weight-gradient
    dots of an unrolled layer loop at the end, beside the optimizer update that reads them: every layer's
    backward activations then looked live at once (Muon with 24 unrolled layers +207%, a Whisper decoder
    +84%, a phi step +125%; with this order +27%, +62%, +74%). Moved across a while loop too (the Whisper
    decoder's weight gradients across the encoder's backward scan); in scan train steps that moves the LM
    head's weight gradient before the backward loop, and their figures go from +0% to -3..-8%: XLA keeps
    the logits' gradient through the loop there."""
    keys: dict[str, tuple[int, ...]] = {}
    for position, inst in enumerate(comp.instructions):
        key: tuple[int, ...] = (position,)
        if inst.opcode in SHRINKING and inst.operands and not inst.attr("control-predecessors"):
            producers = [comp.by_name.get(o.name or "") for o in inst.operands]
            if all(p is not None for p in producers) and \
                    2 * _logical_bytes(inst.shape) <= max(_logical_bytes(p.shape) for p in producers):
                key = max(keys[p.name] for p in producers) + (position,)
        keys[inst.name] = key
    return sorted(comp.instructions, key=lambda i: keys[i.name])


def _logical_bytes(shape: Shape | None) -> int:
    return unpadded_bytes(shape) if shape is not None and shape.is_array else 0
