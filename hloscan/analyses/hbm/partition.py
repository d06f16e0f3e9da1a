"""One device's share of a multi-device module that XLA has not partitioned yet (before_optimizations of a
sharded jax program: global shapes, `sharding=` annotations, `num_partitions=N`).

XLA's SPMD partitioner (GSPMD, or Shardy exported to HLO shardings) splits every array as its sharding says
and propagates shardings to the instructions nobody annotated. This module does a simple forward version of
that propagation, enough to size each value on one device:

* an annotation (`sharding=`, jax's `Sharding` custom call, entry parameters and the ROOT's output shardings)
  is exact: the shard's dims are the global dims divided by the tiles;
* elementwise ops, converts, copies and in-place updates keep their operand's split; a transpose permutes
  it; a broadcast keeps the operand's splits on the dims it maps to; a reduce keeps the splits of the dims it
  keeps; a convolution keeps its batch split; a dot keeps the splits of its batch and free dims (one operand's
  free dims as the partitioner gathers the other when both are split), capped at the device count;
* loop state, call arguments and tuple elements carry their split into the called computations;
* a reshape hands each group of dims' split to the group's major dim, a slice keeps the splits of the dims it
  keeps whole, a concatenation of alike-split operands along an unsplit dim keeps their split;
* anything else (gathers, ...) keeps the largest number of pieces of an operand as a plain divisor (no dims),
  never more than the value's elements.

What is missed is what the partitioner adds: the gathered copy of an FSDP weight before its dot, the
all-reduce buffers of row-parallel dots, resharding copies (an estimate: the figure says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from hloscan.hlo.attrs import parse_int_list
from hloscan.hlo.ir import Computation, Instruction, Module, Shape
from hloscan.hlo.signature import parse_aliases
from hloscan.hlo.sharding import Sharding, device_coordinates, independent, num_partitions, parse_sharding


@dataclass(frozen=True, slots=True)
class Split:
    """How one array leaf is divided: per-dim tiles when known, else only the number of pieces."""

    pieces: int
    tiles: tuple[int, ...] | None = None

    def local_shape(self, shape: Shape) -> Shape | None:
        """The shard's shape when the tiles are known (None: only a divisor is)."""
        if self.tiles is None or not shape.is_array or len(self.tiles) != len(shape.dims):
            return None
        dims = tuple(-(-d // t) for d, t in zip(shape.dims, self.tiles))
        return Shape(shape.element_type, dims, shape.dynamic, shape.layout)


WHOLE = Split(1)
# Custom calls that enter a manual (shard_map) region, GSPMD's and Shardy's: their results are one device's.
_ENTER_MANUAL = frozenset({"SPMDFullToShardShape", "xla.sdy.GlobalToLocalShape"})
_MAX_DEPTH = 64
Factor = Union[Split, list]  # a Split per array leaf, nested lists for tuples

ELEMENTWISE_KEEP = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "convert", "copy", "cosine", "divide",
    "exponential", "exponential-minus-one", "floor", "is-finite", "log", "log-plus-one", "logistic", "maximum",
    "minimum", "multiply", "negate", "not", "or", "power", "real", "imag", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor", "erf", "bitcast-convert",
    "stochastic-convert", "clz", "popcnt", "dynamic-update-slice", "scatter", "optimization-barrier", "opt-barrier",
    "copy-start", "copy-done",
})


def from_sharding(s: Sharding, shape: Shape | None, devices: int) -> Split:
    if s.kind != "tiled" or not s.tiles:
        return WHOLE
    if shape is not None and shape.is_array and len(s.tiles) == len(shape.dims):
        return Split(min(s.shards, devices) or 1, s.tiles)
    return Split(min(s.shards, devices) or 1)


class Propagation:
    """Splits of every instruction of the module. A while body and condition are propagated from the first
    loop reaching them; a called computation or branch from each call site in turn (the last one's splits stay)."""

    def __init__(self, module: Module, devices: int):
        self.module = module
        self.devices = devices
        self.comps = module.computations_by_name
        self.factors: dict[tuple[str, str], Factor] = {}
        self._visited: set[str] = set()
        self._loop_states: dict[str, Factor] = {}  # a while body's state splits, for a loop reached again
        self._depth = 0
        self._readers: dict[str, dict[str, int]] = {}  # per computation: value name -> instructions reading it
        self._data_parallel = _integer_inputs_split_everywhere(module, devices)
        self._weights_replicated = self._data_parallel and _float_parameters_replicated(module)

    def run(self) -> dict[tuple[str, str], Factor]:
        entry = self.module.entry
        params = {n: self._annotated(i) or self._whole(i.shape) for n, i in entry.parameter_instructions.items()}
        self._computation(entry, params)
        return self.factors

    # ------------------------------------------------------------------------------------------ helpers

    def _whole(self, shape: Shape | None) -> Factor:
        if shape is not None and shape.is_tuple:
            return [self._whole(s) for s in shape.tuple_shapes]
        return WHOLE

    def _annotated(self, inst: Instruction) -> Factor | None:
        leaves = parse_sharding(inst.attr("sharding"))
        if not leaves:
            return None
        shape = inst.shape
        if shape is not None and shape.is_tuple:
            flat = [leaf for _, leaf in shape.leaves()]
            if len(leaves) == 1:
                leaves = leaves * len(flat)
            splits = iter(from_sharding(s, leaf, self.devices) for s, leaf in zip(leaves, flat))
            return _rebuild(shape, splits)
        return from_sharding(leaves[0], shape, self.devices)

    def _computation(self, comp: Computation, params: dict[int, Factor]) -> Factor:
        env: dict[str, Factor] = {}
        for inst in comp.instructions:
            factor = self._instruction(comp, inst, env, params)
            env[inst.name] = factor
            self.factors[(comp.name, inst.name)] = factor
        return env.get(comp.root.name, WHOLE)

    def _operand(self, env: dict[str, Factor], inst: Instruction, i: int) -> Factor:
        op = inst.operands[i]
        factor = env.get(op.name or "", WHOLE)
        for k in op.tuple_index:
            factor = factor[k] if isinstance(factor, list) and k < len(factor) else WHOLE
        return factor

    def _callee(self, name: str | None) -> Computation | None:
        return self.comps.get((name or "").strip().lstrip("%"))

    # ------------------------------------------------------------------------------------------ rules

    def _instruction(self, comp: Computation, inst: Instruction, env: dict[str, Factor],
                     params: dict[int, Factor]) -> Factor:
        op = inst.opcode
        operands = [self._operand(env, inst, i) for i in range(len(inst.operands))]
        if op == "parameter":
            return self._annotated(inst) or params.get(inst.parameter_number or 0, self._whole(inst.shape))
        if op == "custom-call" and inst.custom_call_target in _ENTER_MANUAL:
            return self._whole(inst.shape)  # a manual (shard_map) region: shapes are already one device's
        if op == "custom-call" and inst.custom_call_target == "xla.sdy.LocalToGlobalShape":
            return self._leaving_manual(comp, inst)
        annotated = self._annotated(inst)
        if op in ("while", "call", "conditional"):
            result = self._control(inst, operands)
            if op == "while" and inst.operands:
                self._split_initial_state(comp, env, inst.operands[0].name, result)
            return annotated or result
        if annotated is not None:
            if op == "custom-call" and inst.custom_call_target == "Sharding" and inst.operands:
                self._split_filled_producer(comp, env, inst.operands[0].name, annotated)
            return annotated
        if op == "get-tuple-element":
            index = int(inst.attr("index", "0") or 0)
            src = operands[0] if operands else WHOLE
            return src[index] if isinstance(src, list) and index < len(src) else src
        if op == "tuple":
            return list(operands)
        if op in ("bitcast", "reshape"):
            src = operands[0] if operands else WHOLE
            reshaped = _reshaped(src, comp.operand_shape(inst, 0), inst.shape) if isinstance(src, Split) else None
            return reshaped or self._pieces_only(inst, operands[:1])
        if op in ("slice", "dynamic-slice") and operands and isinstance(operands[0], Split):
            kept = _sliced(operands[0], comp.operand_shape(inst, 0), inst.shape)
            return kept or self._pieces_only(inst, operands[:1])
        if op == "gather" and len(operands) >= 2:
            kept = _gathered(operands[0], operands[1], comp, inst)
            return kept or self._pieces_only(inst, operands)
        if op == "concatenate" and operands:
            kept = _concatenated(operands, inst)
            return kept or self._pieces_only(inst, operands)
        if op == "transpose" and operands and isinstance(operands[0], Split):
            return _transposed(operands[0], _ints(inst.attr("dimensions")))
        if op == "broadcast" and operands and isinstance(operands[0], Split):
            return self._broadcast(inst, operands[0])
        if op == "reduce" and operands and isinstance(operands[0], Split):
            return self._reduce(inst, operands[0])
        if op == "dot" and len(operands) >= 2:
            return self._dot(comp, inst, operands[0], operands[1])
        if op == "convolution" and operands and isinstance(operands[0], Split):
            return _convolved(inst, operands[0]) or self._pieces_only(inst, operands)
        if op in ELEMENTWISE_KEEP:
            result = self._elementwise(inst, operands)
        elif _sorts_along_a_dim(inst):
            result = _aligned(inst, comp, operands) or self._pieces_only(inst, operands)
        else:
            return self._pieces_only(inst, operands)
        self._split_filled_operands(comp, env, inst, result)
        return result

    def _control(self, inst: Instruction, operands: list[Factor]) -> Factor:
        """Loop state and call arguments carry their splits into the called computations."""
        if inst.opcode == "while":
            # The loop state keeps one split per element; what the body writes into it (a scan's stacked
            # residuals, zeros split like the slices updated into them) counts too: twice round the body.
            state = operands[0] if operands else WHOLE
            body = self._callee(inst.attr("body"))
            if body is None:
                return state
            if body.name in self._visited:
                # Reached again (a scan inside a gradient-accumulation loop's body, propagated twice): the
                # state keeps what the body wrote into it the first time.
                return _merge(state, self._loop_states.get(body.name, state))
            self._visited.add(body.name)
            for _ in range(2):
                merged = _merge(state, self._computation(body, {0: state}))
                if merged == state:
                    break
                state = merged
            self._loop_states[body.name] = state
            cond = self._callee(inst.attr("condition"))
            if cond is not None and cond.name not in self._visited:
                self._visited.add(cond.name)
                self._computation(cond, {0: state})
            return state
        names = [inst.attr("to_apply")] if inst.opcode == "call" else inst.branch_names
        result: Factor = self._whole(inst.shape)
        for k, name in enumerate(names):
            # A computation called from several places (jax's dynamic_index_in_dim for every stacked weight)
            # is propagated again for each: its splits are those of the last call site.
            callee = self._callee(name)
            if callee is None or self._depth > _MAX_DEPTH:
                continue
            self._depth += 1
            args = {i: f for i, f in enumerate(operands)} if inst.opcode == "call" else \
                {0: operands[k + 1] if k + 1 < len(operands) else WHOLE}
            try:
                result = self._computation(callee, args)
            finally:
                self._depth -= 1
        return result

    def _split_initial_state(self, comp: Computation, env: dict[str, Factor], tuple_name: str | None,
                             state: Factor) -> None:
        """The partitioner splits a loop's initial buffers as the loop state is split (backward
        propagation): zeros broadcast for a scan's stacked outputs take their slices' split."""
        tup = comp.by_name.get(tuple_name or "")
        if tup is None or tup.opcode != "tuple" or not isinstance(state, list):
            return
        for k, operand in enumerate(tup.operands[:len(state)]):
            producer = comp.by_name.get(operand.name or "")
            if producer is None or operand.tuple_index or not isinstance(state[k], Split):
                continue
            if producer.opcode in ("broadcast", "constant", "iota", "copy"):
                self._split_further(comp, env, producer, state[k])

    def _split_filled_producer(self, comp: Computation, env: dict[str, Factor], name: str | None,
                               split: Factor) -> None:
        """The partitioner propagates shardings backward too: an array filled from no data (a broadcast of a
        scalar, an iota) that a sharding annotation reads is created already split as the annotation says.
        The zero-filled f32[32, 768, 8, 512, 512] mLSTM state of a v7x generation loop (sharded9) was 24G per
        device, not the whole 192G."""
        producer = comp.by_name.get(name or "")
        if producer is not None and isinstance(split, Split) and _filled_from_no_data(comp, producer):
            self._split_further(comp, env, producer, split)

    def _split_filled_operands(self, comp: Computation, env: dict[str, Factor], inst: Instruction,
                               result: Factor) -> None:
        """Backward propagation to operands filled from no data: the partitioner gives an operand the sharding
        of its reader when they have the same dims, so zeros a scatter adds into (the one-hot gradient of a
        top-k over a kNN memory, f32[16, 16, 2048, 32768]) and the iota an approximate top-k reads beside its
        scores are created split like the result, not whole (sharded10's Memorizing Transformer: +307%)."""
        if inst.opcode == "scatter":
            result = _scatter_batch_split(comp, inst, env)
        leaves = result if isinstance(result, list) else [result]
        references = list(zip(leaves, (leaf.dims for leaf in _leaf_shapes(inst.shape))))
        if _sorts_along_a_dim(inst) and inst.operands:  # the operands a sort reads beside its keys
            first, first_shape = self._operand(env, inst, 0), comp.operand_shape(inst, 0)
            if first_shape is not None and first_shape.is_array:
                references.append((first, first_shape.dims))
        references = [(f, dims) for f, dims in references
                      if isinstance(f, Split) and f.tiles is not None and f.pieces > 1]
        if not references:
            return
        operands = inst.operands[:1] if inst.opcode == "scatter" else inst.operands
        for i, operand in enumerate(operands):
            producer = comp.by_name.get(operand.name or "")
            shape = comp.operand_shape(inst, i)
            if producer is None or operand.tuple_index or shape is None or not shape.is_array:
                continue
            if not _filled_from_no_data(comp, producer):
                continue
            if self._reader_count(comp, producer.name) > 1:
                # Zeros several ops read (a scatter-add's operand and a ReLU's compare) are one value here but
                # each reader's own broadcast in the compiled program: keep the split they had.
                continue
            # Only a sibling of the same dims as a result (an elementwise op's operands, the scores and iota
            # of a top-k): an operand of other dims takes no split from the result.
            split = next((f for f, dims in references if dims == shape.dims), None)
            if split is not None:
                self._split_further(comp, env, producer, split)

    def _reader_count(self, comp: Computation, name: str) -> int:
        counts = self._readers.get(comp.name)
        if counts is None:
            counts = {}
            for inst in comp.instructions:
                for operand in set(inst.operand_names):
                    counts[operand] = counts.get(operand, 0) + 1
            self._readers[comp.name] = counts
        return counts.get(name, 0)

    def _split_further(self, comp: Computation, env: dict[str, Factor], producer: Instruction, split: Split) -> None:
        """A split learnt from a value's reader (backward propagation) replaces the producer's when it has more
        pieces."""
        current = env.get(producer.name)
        if isinstance(current, Split) and current.pieces < split.pieces:
            env[producer.name] = split
            self.factors[(comp.name, producer.name)] = split

    def _leaving_manual(self, comp: Computation, inst: Instruction) -> Factor:
        """Shardy's exit from a shard_map region turns each one-device value back into a global one. The
        split of each is exact without reading the `xla.sdy.out_shardings` it carries: the global dims over the
        local dims the region computed (rounded up, as the partitioner pads)."""
        shape = inst.shape
        if shape is None:
            return WHOLE
        leaves = list(shape.tuple_shapes) if shape.is_tuple else [shape]
        splits: list[Factor] = []
        for i, leaf in enumerate(leaves):
            local = comp.operand_shape(inst, i) if i < len(inst.operands) else None
            if local is None or not local.is_array or not leaf.is_array or len(local.dims) != len(leaf.dims):
                splits.append(WHOLE)
                continue
            tiles = tuple(max(1, -(-g // l)) if l else 1 for g, l in zip(leaf.dims, local.dims))
            splits.append(Split(max(1, min(math.prod(tiles), self.devices)), tiles))
        return splits if shape.is_tuple else splits[0]

    def _pieces_only(self, inst: Instruction, operands: list[Factor]) -> Factor:
        shape = inst.shape
        if shape is None or shape.is_tuple:
            return self._whole(shape)
        pieces = max((f.pieces for f in operands if isinstance(f, Split)), default=1)
        elements = math.prod(shape.dims) if shape.dims else 1
        return Split(max(1, min(pieces, elements, self.devices)))

    def _elementwise(self, inst: Instruction, operands: list[Factor]) -> Factor:
        shape = inst.shape
        if shape is None or shape.is_tuple:
            return operands[0] if operands else self._whole(shape)
        same = [f for f in operands if isinstance(f, Split) and f.tiles is not None and len(f.tiles) == len(shape.dims)]
        if not same:
            return self._pieces_only(inst, operands)
        best = max(same, key=lambda f: f.pieces)
        if best.pieces == 1 and any(isinstance(f, Split) and f.pieces > 1 for f in operands):
            # The operand whose dims are known is whole (a replicated bias, a broadcast of a whole value) and
            # another is split into pieces whose dims were lost (past a gather or a custom call): the result is
            # as split as that one, not whole. Only then: a split with known dims still wins over more pieces
            # without them (pieces always winning split a v7x tp optimizer update 8-way, past its 4 shards).
            return self._pieces_only(inst, operands)
        return best

    def _broadcast(self, inst: Instruction, src: Split) -> Split:
        shape = inst.shape
        dims = _ints(inst.attr("dimensions"))
        if src.tiles is None or shape is None or not shape.is_array or len(dims) != len(src.tiles):
            return Split(1) if src.pieces == 1 else self._pieces_only(inst, [src])
        tiles = [1] * len(shape.dims)
        for operand_dim, out_dim in enumerate(dims):
            if out_dim < len(tiles):
                tiles[out_dim] = src.tiles[operand_dim]
        return Split(math.prod(tiles), tuple(tiles))

    def _reduce(self, inst: Instruction, src: Split) -> Split:
        shape = inst.shape
        reduced = set(_ints(inst.attr("dimensions")))
        if shape is None or not shape.is_array or src.tiles is None:
            return self._pieces_only(inst, [src])
        tiles = tuple(t for d, t in enumerate(src.tiles) if d not in reduced)
        if len(tiles) != len(shape.dims):
            return WHOLE
        return Split(math.prod(tiles), tiles)

    def _dot(self, comp: Computation, inst: Instruction, lhs: Factor, rhs: Factor) -> Factor:
        shape = inst.shape
        if not (isinstance(lhs, Split) and isinstance(rhs, Split)) or shape is None or not shape.is_array:
            return self._pieces_only(inst, [lhs, rhs])
        lc = set(_ints(inst.attr("lhs_contracting_dims")))
        rc = set(_ints(inst.attr("rhs_contracting_dims")))
        if self._weights_replicated and _sums_over_examples(lhs, rhs, lc, rc):
            # Data parallelism: a weight gradient sums over the examples every device holds a part of, and the
            # partitioner all-reduces it into a whole one, as the weight is whole. The stacked f32 gradient
            # accumulators of a scanned backward pass were whole in the compiled v5p ViT-e (sharded4, 5.74G
            # each, not 1.44G): -17% -> -3%, and dp_L8_over (sharded1) -16% -> -1%. FSDP programs split the
            # weights, and their gradients are reduce-scattered (kept split below).
            return Split(1, (1,) * len(shape.dims))
        lhs = _with_tiles(lhs, comp.operand_shape(inst, 0))
        rhs = _with_tiles(rhs, comp.operand_shape(inst, 1))
        if lhs.tiles is None or rhs.tiles is None:
            return self._pieces_only(inst, [lhs, rhs])
        lb = _ints(inst.attr("lhs_batch_dims"))
        rb = _ints(inst.attr("rhs_batch_dims"))
        lhs_free = [d for d in range(len(lhs.tiles)) if d not in lc and d not in lb]
        rhs_free = [d for d in range(len(rhs.tiles)) if d not in rc and d not in rb]
        batch = [max(lhs.tiles[a], rhs.tiles[b]) for a, b in zip(lb, rb)]
        left = [lhs.tiles[d] for d in lhs_free]
        right = [rhs.tiles[d] for d in rhs_free]
        tiles = batch + left + right
        if len(tiles) != len(shape.dims):
            return self._pieces_only(inst, [lhs, rhs])
        if math.prod(tiles) > self.devices:
            # Both sides split over the same devices (FSDP weights): the partitioner gathers the weight
            # and keeps the activation's split.
            keep = left if math.prod(batch + left) >= math.prod(batch + right) else right
            tiles = batch + (left if keep is left else [1] * len(left)) + (right if keep is right else [1] * len(right))
        fanned = _partial_sums_scattered(lhs, rhs, lc, rc, comp, inst, tiles, len(batch), self.devices)
        if fanned is not None:
            return fanned
        if math.prod(tiles) == 1 and self._data_parallel:
            # Both split only on the contracted dim. Megatron's row-parallel dot sums partial results into a
            # replicated one; in a program split by data, the partitioner keeps the result split instead (a
            # Whisper decoder whose embedding kept the table's d split: its q projection came out split by
            # heads, not whole; counted whole, the unrolled decoder's step was +178%, with it +84%).
            moved = _contracted_split_moved(lhs, rhs, lc, rc, shape, len(batch), len(left))
            if moved is not None:
                return moved
        return Split(max(1, min(math.prod(tiles), self.devices)), tuple(tiles))


def _convolved(inst: Instruction, lhs: Split) -> Split | None:
    """A convolution keeps its input's batch split with the output's dims known (`dim_labels` name the batch
    dim `b` on both sides), as the partitioner splits a data-parallel convolution by its batch: what reads it
    downstream (zeros a scatter or pad writes into, elementwise ops) is then split like it, not only by a
    divisor. None when the batch is not split (a weight gradient contracts the batch: no split is known)."""
    shape = inst.shape
    labels = (inst.attr("dim_labels") or "").split("->")
    if shape is None or not shape.is_array or lhs.tiles is None or len(labels) != 2:
        return None
    lhs_labels, out_labels = labels[0].split("_")[0], labels[1]
    if len(lhs_labels) != len(lhs.tiles) or len(out_labels) != len(shape.dims) or "b" not in lhs_labels \
            or "b" not in out_labels:
        return None
    batch_tile = lhs.tiles[lhs_labels.index("b")]
    if batch_tile <= 1:
        return None
    tiles = [1] * len(shape.dims)
    tiles[out_labels.index("b")] = batch_tile
    return Split(batch_tile, tuple(tiles))


def _filled_from_no_data(comp: Computation, producer: Instruction) -> bool:
    """An iota, or a broadcast of a scalar or of an iota (a broadcast of data keeps the split propagated from
    its operand)."""
    if producer.opcode == "iota":
        return True
    if producer.opcode != "broadcast":
        return False
    source = comp.operand_shape(producer, 0)
    if source is None or not source.is_array:
        return False
    if not source.dims:
        return True
    inner = comp.by_name.get(producer.operands[0].name or "") if producer.operands else None
    return inner is not None and inner.opcode == "iota"


def _leaf_shapes(shape: Shape | None) -> list[Shape]:
    if shape is None:
        return []
    return [s for s in shape.tuple_shapes if s.is_array] if shape.is_tuple else [shape]


_SORT_LIKE_TARGETS = frozenset({"TopK", "PartialReduce", "ApproxTopK"})


def _sorts_along_a_dim(inst: Instruction) -> bool:
    """A top-k, sort or approximate top-k: its results keep the operand's dims except the one it works along."""
    return inst.opcode in ("topk", "sort") or (
        inst.opcode == "custom-call" and inst.custom_call_target in _SORT_LIKE_TARGETS)


def _scatter_batch_split(comp: Computation, inst: Instruction, env: dict) -> Split | None:
    """The split a scatter's operand takes from its updates through explicit batching dims (operand dim
    `input_batching_dims[j]` is the updates' dim of indices dim `scatter_indices_batching_dims[j]`). A
    scatter without batching dims gives its operand no split: an embedding gradient scattered into zeros from
    data-split updates is summed into a whole table."""
    operand_dims = _ints(inst.attr("input_batching_dims"))
    index_dims = _ints(inst.attr("scatter_indices_batching_dims"))
    if not operand_dims or len(inst.operands) < 3:
        return None
    shape, ishape, ushape = (comp.operand_shape(inst, i) for i in (0, 1, 2))
    updates = env.get(inst.operands[2].name or "")
    if not isinstance(updates, Split) or updates.tiles is None or shape is None or ishape is None or ushape is None:
        return None
    window = set(_ints(inst.attr("update_window_dims")))
    vector_dim = int(inst.attr("index_vector_dim") or len(ishape.dims))
    scatter_dims = [d for d in range(len(ushape.dims)) if d not in window]
    index_order = [d for d in range(len(ishape.dims)) if d != vector_dim]
    tiles = [1] * len(shape.dims)
    for od, idim in zip(operand_dims, index_dims):
        if idim in index_order and index_order.index(idim) < len(scatter_dims) and od < len(tiles):
            tiles[od] = updates.tiles[scatter_dims[index_order.index(idim)]]
    return Split(math.prod(tiles), tuple(tiles)) if math.prod(tiles) > 1 else None


def _aligned(inst: Instruction, comp: Computation, operands: list[Factor]) -> Factor | None:
    """A top-k, sort or approximate top-k (PartialReduce, TopK) whose result leaves have an operand's rank and
    dims where that operand is split: each leaf keeps the
    operand's split, as the partitioner keeps the dims it does not work along (a top-k over the last dim of
    [batch, heads, queries, memory] scores stays split by batch). None when no operand lines up."""
    shape = inst.shape
    if shape is None:
        return None
    candidates = []
    for i, f in enumerate(operands):
        oshape = comp.operand_shape(inst, i) if i < len(inst.operands) else None
        if isinstance(f, Split) and f.tiles is not None and f.pieces > 1 and oshape is not None and oshape.is_array:
            candidates.append((f, oshape))
    if not candidates:
        return None

    def leaf_split(leaf: Shape) -> Split | None:
        for f, oshape in candidates:
            if len(oshape.dims) == len(leaf.dims) and all(
                    t == 1 or a == b for t, a, b in zip(f.tiles, oshape.dims, leaf.dims)):
                return f
        return None

    if shape.is_tuple:
        leaves = [leaf_split(s) if s.is_array else None for s in shape.tuple_shapes]
        if not any(leaves):
            return None
        return [f or WHOLE for f in leaves]
    return leaf_split(shape) if shape.is_array else None


def _sliced(src: Split, before: Shape | None, after: Shape | None) -> Split | None:
    """A slice keeps the splits of the dims it keeps whole (a scan's dynamic-slice of one layer's weights out of
    the stacked, model-sharded array keeps that layer's model split); a dim it cuts is counted whole."""
    if src.tiles is None or before is None or after is None or not after.is_array or len(before.dims) != len(after.dims):
        return None
    tiles = tuple(t if a == b else 1 for t, a, b in zip(src.tiles, before.dims, after.dims))
    return Split(math.prod(tiles), tiles)


def _gathered(table: Factor, indices: Factor, comp: Computation, inst: Instruction) -> Split | None:
    """An embedding lookup: the result's batch dims take the indices' splits (the tokens' data split), its
    offset dims the table's splits on the dims it takes whole. A batched gather (jax's vmap of a lookup: an
    ensemble's per-member tables, `operand_batching_dims`) pairs each table batching dim with an index dim:
    the result dim takes the split of either (a members x data mesh: tables split by member, tokens by member
    and data; the vmapped GPT ensemble's residual stream split both ways, 4 pieces, not the table's 2)."""
    shape, tshape = inst.shape, comp.operand_shape(inst, 0)
    ishape = comp.operand_shape(inst, 1)
    if not (isinstance(table, Split) and isinstance(indices, Split)) or shape is None or not shape.is_array:
        return None
    if tshape is None or ishape is None:
        return None
    table = _with_tiles(table, tshape)
    indices = _with_tiles(indices, ishape)
    if table.tiles is None or indices.tiles is None:
        return None
    offset = _ints(inst.attr("offset_dims"))
    collapsed = set(_ints(inst.attr("collapsed_slice_dims")))
    table_batch, index_batch = _ints(inst.attr("operand_batching_dims")), _ints(inst.attr("start_indices_batching_dims"))
    if len(table_batch) != len(index_batch):
        return None
    sizes = _ints(inst.attr("slice_sizes"))
    vector_dim = int(inst.attr("index_vector_dim") or len(ishape.dims))
    index_tiles = [t for d, t in enumerate(indices.tiles) if d != vector_dim]
    for t_dim, i_dim in zip(table_batch, index_batch):
        at = i_dim - (i_dim > vector_dim)
        if t_dim >= len(table.tiles) or not 0 <= at < len(index_tiles):
            return None
        if index_tiles[at] == 1:
            index_tiles[at] = table.tiles[t_dim]
    sliced = [d for d in range(len(tshape.dims)) if d not in collapsed and d not in table_batch]
    whole = [d for d in sliced if d < len(sizes) and sizes[d] == tshape.dims[d]]
    slice_tiles = [table.tiles[d] if d in whole else 1 for d in sliced]
    if len(index_tiles) + len(slice_tiles) != len(shape.dims) or len(slice_tiles) != len(offset):
        return None
    if any(t > 1 for t in index_tiles) and _split_on_one_axis(comp, inst, slice_dims=whole):
        # The table's dim and the tokens' batch are split over the same mesh axis (fsdp_tp: embed
        # P(model, data), tokens P(data)): the partitioner cannot split both, and keeps the table's (a dp x
        # fsdp_tp step on v7x held its residual stream whole in batch, d split 2 ways).
        index_tiles = [1] * len(index_tiles)
    tiles, it, st = [], iter(index_tiles), iter(slice_tiles)
    for d in range(len(shape.dims)):
        tiles.append(next(st) if d in offset else next(it))
    return Split(math.prod(tiles), tuple(tiles))


def _split_on_one_axis(comp: Computation, inst: Instruction, slice_dims: list[int]) -> bool:
    """Whether a split dim of the gather's indices (as annotated where they come from) uses a mesh axis that
    also splits one of the table's dims taken whole."""
    table, indices = (_annotated_source(comp, op.name or "") for op in inst.operands[:2])
    if table is None or indices is None:
        return False
    table_coords, index_coords = device_coordinates(table), device_coordinates(indices)
    if not table_coords or not index_coords:
        return False
    taken = [table_coords[d] for d in slice_dims if d < len(table_coords) and len(set(table_coords[d].values())) > 1]
    split = [c for c in index_coords if len(set(c.values())) > 1]
    return any(not independent(a, b) for a in split for b in taken)


def _annotated_source(comp: Computation, name: str, depth: int = 8) -> str | None:
    """The `sharding=` of the value `name` or of what it is computed from element for element (reshapes,
    converts, selects of the tokens), within one computation."""
    inst = comp.by_name.get(name)
    while inst is not None and depth > 0:
        text = inst.attr("sharding")
        if text:
            return text
        if inst.opcode not in ELEMENTWISE_KEEP and inst.opcode not in ("reshape", "bitcast", "broadcast"):
            return None
        count = _elements(inst.shape)
        same = [op for i, op in enumerate(inst.operands) if _elements(comp.operand_shape(inst, i)) == count]
        inst = comp.by_name.get(same[0].name or "") if same else None
        depth -= 1
    return None


def _elements(shape: Shape | None) -> int | None:
    return math.prod(shape.dims) if shape is not None and shape.is_array else None


def _concatenated(operands: list[Factor], inst: Instruction) -> Split | None:
    """Operands split alike, joined along a dim none of them splits (rotary embedding's halves), stay split."""
    dims = _ints(inst.attr("dimensions"))
    splits = [f for f in operands if isinstance(f, Split)]
    if len(splits) != len(operands) or not splits or splits[0].tiles is None or len(dims) != 1:
        return None
    tiles = splits[0].tiles
    if any(f.tiles != tiles for f in splits) or dims[0] >= len(tiles) or tiles[dims[0]] != 1:
        return None
    return splits[0]


def _reshaped(src: Split, before: Shape | None, after: Shape | None) -> Split | None:
    """A split carried through a reshape that splits or merges dims: each group of input dims that becomes a
    group of output dims hands its tiles to the group's major output dim (the partitioner keeps a sharded
    major dim sharded when it is divisible). None when the dims do not line up (the caller keeps only the
    number of pieces). Without this, attention scores reshaped to (batch, kv heads, q per kv, s, s) lost the
    head split they had next to the batch split: a dp x tp step counted them 2-way instead of 4-way."""
    if (src.tiles is None or before is None or after is None or not before.is_array or not after.is_array
            or len(src.tiles) != len(before.dims)):
        return None
    a, b = list(before.dims), list(after.dims)
    tiles = [1] * len(b)
    i = j = 0
    while i < len(a) and j < len(b):
        gi, gj = [i], [j]
        pa, pb = a[i], b[j]
        while pa != pb:
            if pa < pb and gi[-1] + 1 < len(a):
                gi.append(gi[-1] + 1); pa *= a[gi[-1]]
            elif pb < pa and gj[-1] + 1 < len(b):
                gj.append(gj[-1] + 1); pb *= b[gj[-1]]
            else:
                return None
        tile = math.prod(src.tiles[k] for k in gi)
        sized = [k for k in gi if a[k] > 1]  # a unit dim merged in (a squeezed layer index) moves nothing
        if any(src.tiles[k] > 1 for k in sized[1:]) or b[gj[0]] % tile:
            return None  # a split minor dim merged away, or a tile the major output dim cannot hold
        tiles[gj[0]] = tile
        i, j = gi[-1] + 1, gj[-1] + 1
    if any(src.tiles[k] > 1 for k in range(i, len(a))):
        return None
    return Split(math.prod(tiles), tuple(tiles))


def _with_tiles(split: Split, shape: Shape | None) -> Split:
    """A whole (unsplit) operand as explicit ones over its dims, so a dot can combine it with the other."""
    if split.tiles is not None or split.pieces != 1:
        return split
    return Split(1, (1,) * len(shape.dims)) if shape is not None and shape.is_array else split


def _merge(a: Factor, b: Factor) -> Factor:
    """Element by element, the split into more pieces."""
    if isinstance(a, list) and isinstance(b, list):
        return [_merge(x, y) for x, y in zip(a, b)] + a[len(b):]
    if isinstance(a, Split) and isinstance(b, Split):
        return b if b.pieces > a.pieces else a
    return a


def _ints(raw: str | None) -> list[int]:
    return parse_int_list(raw) or []


def _transposed(src: Split, perm: list[int]) -> Split:
    if src.tiles is None or len(perm) != len(src.tiles):
        return src
    return Split(src.pieces, tuple(src.tiles[p] for p in perm))


def _rebuild(shape: Shape, leaves) -> Factor:
    if shape.is_tuple:
        return [_rebuild(s, leaves) for s in shape.tuple_shapes]
    return next(leaves, WHOLE)


def shard_factors(module: Module) -> dict[tuple[str, str], Factor] | None:
    """Per instruction, how one device's share of it is cut; None for a module on one device."""
    devices = num_partitions(module)
    if devices <= 1:
        return None
    return Propagation(module, devices).run()


def sharding_summary(module: Module) -> str:
    """What the entry parameters' shardings say, e.g. `12 of 14 parameters split (4 ways), 2 replicated`."""
    devices = num_partitions(module)
    split = replicated = 0
    ways: set[int] = set()
    for inst in module.entry.parameter_instructions.values():
        for s in parse_sharding(inst.attr("sharding")) or []:
            if s.kind == "tiled" and s.shards > 1:
                split += 1
                ways.add(min(s.shards, devices))
            else:
                replicated += 1
    if not split and not replicated:
        return "no shardings on the parameters"
    way = "/".join(str(w) for w in sorted(ways)) or "1"
    return f"{split} parameter arrays split {way} ways, {replicated} replicated"


def _sums_over_examples(lhs: Split, rhs: Split, lhs_contracting: set[int], rhs_contracting: set[int]) -> bool:
    """Both operands split on their leading (example) dim and contract it: a weight gradient x^T dy."""
    def leading(split: Split) -> bool:
        if split.pieces <= 1:
            return False
        return split.tiles is None or (split.tiles[0] > 1 and math.prod(split.tiles[1:]) == 1)
    return 0 in lhs_contracting and 0 in rhs_contracting and leading(lhs) and leading(rhs)


def _float_parameters_replicated(module: Module) -> bool:
    """Nine tenths of the weights' bytes are replicated (data parallelism). The weights are the floating-point
    entry parameters the step updates in place (aliased with an output), so the input examples, split
    however large, do not count; with no aliasing, every floating-point parameter counts."""
    aliased = {a.parameter for a in parse_aliases(module.attr("input_output_alias"))}
    split = whole = 0
    for number, inst in module.entry.parameter_instructions.items():
        shape = inst.shape
        if (aliased and number not in aliased) or shape is None or not shape.is_array \
                or not shape.element_type.startswith(("f", "bf")):
            continue
        size = math.prod(shape.dims or (1,))
        shardings = parse_sharding(inst.attr("sharding")) or []
        if any(s.kind == "tiled" and s.shards > 1 for s in shardings):
            split += size
        else:
            whole += size
    return whole >= 9 * split and whole > 0


def _contracted_split_moved(lhs: Split, rhs: Split, lhs_contracting: set[int], rhs_contracting: set[int],
                            shape: Shape, n_batch: int, n_left: int) -> Split | None:
    """Both operands split only on the contracted dim, in a data-parallel program (see `_dot`): the result
    keeps as many pieces, on the first free dim that holds them (the weight's output features first, as the
    compiled Whisper decoder's q projection was split by heads)."""
    pieces = min(math.prod(lhs.tiles[d] for d in lhs_contracting), math.prod(rhs.tiles[d] for d in rhs_contracting))
    if pieces <= 1:
        return None
    dims = list(shape.dims)
    free = list(range(n_batch + n_left, len(dims))) + list(range(n_batch, n_batch + n_left))
    for d in free:
        if dims[d] >= pieces and dims[d] % pieces == 0:
            tiles = [1] * len(dims)
            tiles[d] = pieces
            return Split(pieces, tuple(tiles))
    return None


def _partial_sums_scattered(lhs: Split, rhs: Split, lhs_contracting: set[int], rhs_contracting: set[int],
                            comp: Computation, inst: Instruction, tiles: list[int], n_batch: int,
                            devices: int) -> Split | None:
    """Both operands split on the contracted dim, and the result larger than either (a vocabulary projection):
    the partitioner does not all-reduce a replicated result that size but reduce-scatters the partial sums onto
    the lhs's first free dim (the examples). The compiled v7x Gemma step (FSDP x TP, sharded2) held its logits
    as f32[8, 4096, 128000] per device, from a hidden state split on d and a head split on d and vocabulary;
    counted split on the vocabulary only, the step was +128%."""
    pieces = min(math.prod(lhs.tiles[d] for d in lhs_contracting), math.prod(rhs.tiles[d] for d in rhs_contracting))
    shape, lhs_shape, rhs_shape = inst.shape, comp.operand_shape(inst, 0), comp.operand_shape(inst, 1)
    if pieces <= 1 or math.prod(tiles) * pieces > devices or None in (lhs_shape, rhs_shape):
        return None
    out, left, right = (_elements(x) for x in (shape, lhs_shape, rhs_shape))
    if None in (out, left, right) or out <= max(left, right):
        return None
    free = n_batch  # the lhs's first free dim in the result
    if free >= len(shape.dims) or tiles[free] != 1 or shape.dims[free] % pieces:
        return None
    moved = list(tiles)
    moved[free] = pieces
    return Split(math.prod(moved), tuple(moved))


def _integer_inputs_split_everywhere(module: Module, devices: int) -> bool:
    """Whether some integer entry parameter (token ids, labels) has its leading (batch) dim split over every
    device: a data-parallel or FSDP program, where no mesh axis is left for Megatron-style tensor parallelism."""
    for inst in module.entry.parameter_instructions.values():
        shape = inst.shape
        if shape is None or not shape.is_array or not shape.element_type.startswith(("s", "u")):
            continue
        for s in parse_sharding(inst.attr("sharding")) or []:
            if s.kind == "tiled" and s.tiles and s.tiles[0] >= devices:
                return True
    return False
