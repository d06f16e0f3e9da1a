"""A static replay of XLA's HostOffloader walk: which values live in host memory and where they end up.

The model follows `xla/hlo/transforms/host_offloader.cc` and `host_offload_utils::GetSuccessors` as described
in shared/reference/host-offload.md: walks start at S(5) entry parameters, host outputs of kernels and
`MoveToHost` custom calls (or their frontend form, `annotate_device_placement` to pinned/unpinned host), follow
(instruction, shape index) pairs through tuples, calls, loops, conditionals and compute, and end at
`MoveToDevice`, at slices that are DMAs back to the device, or at the entry ROOT, where the declared output
memory space decides between "output streamed" and E1200.

Two deliberate additions model the compile pipeline that runs *before* the offloader on a pre-optimization
dump: SPMD/Shardy annotation custom calls (`Sharding`, `xla.sdy.FuncResultSharding`, ...) are removed by
then, so they are transparent here; and `call`s are inlined and tuple->get-tuple-element pairs simplified,
so the instruction XLA names as "starting from" is looked up through them.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from hloscan.hlo.attrs import parse_frontend_attributes, parse_int_list, parse_name_list
from hloscan.hlo.graph import called_computations
from hloscan.hlo.ir import HOST_MEMORY_SPACE, Computation, Instruction, Module, Shape
from hloscan.hlo.sharding import SHARDING_ANNOTATIONS
from hloscan.hlo.signature import parse_computation_layout

log = logging.getLogger(__name__)

Index = tuple[int, ...]
Key = tuple[str, str, Index]  # (computation, instruction, shape index)

MOVE_TO_HOST = frozenset({"MoveToHost", "PipelineForward"})  # PipelineForward: the name before 2024-03
MOVE_TO_DEVICE = frozenset({"MoveToDevice", "PipelineBackward"})
HOST_PLACEMENTS = frozenset({"pinned_host", "unpinned_host"})
# Removed by SPMD partitioning / Shardy export before HostOffloader runs, so the value flows through them.
PIPELINE_TRANSPARENT = SHARDING_ANNOTATIONS
# host_offload_utils::IsValidDuringPureMemoryOffload: these get S(5) and are not host compute.
PURE_MEMORY_OPS = frozenset({
    "get-tuple-element", "bitcast", "tuple", "call", "while", "conditional", "parameter", "opt-barrier",
    "async-start", "async-done", "custom-call", "send", "recv", "send-done", "recv-done",
})
# Ops allowed between a (dynamic-)slice and its MoveToDevice (loop plumbing since 2025-10).
_DS_TO_DEVICE_OPS = frozenset({"bitcast", "copy", "tuple", "get-tuple-element", "parameter", "while", "opt-barrier",
                               "call"})  # calls: CallInliner runs before the offloader
# Caller opcodes whose callee ROOT flows back to the call site (CallGraph callers that matter here).
_CALLER_OPCODES = frozenset({"call", "while", "conditional", "async-start", "fusion", "custom-call"})


@dataclass(frozen=True, slots=True)
class Step:
    """One (instruction, shape index) on a host path."""

    computation: str
    instruction: str
    index: Index
    opcode: str
    line: int = 0

    def to_dict(self) -> dict:
        return {"computation": self.computation, "instruction": self.instruction, "shape_index": list(self.index),
                "opcode": self.opcode, "line": self.line}

    def __str__(self) -> str:
        return f"{self.instruction}{{{','.join(map(str, self.index))}}}"


@dataclass(frozen=True)
class Offload:
    """One walk: what moved the value to host (`origin`) and where XLA starts walking (`start`)."""

    kind: str  # "host-parameter" | "kernel-output" | "move-to-host"
    origin: Step
    start: Step
    order: int  # XLA processes walks in this order and reports only the first error


@dataclass(frozen=True)
class OutputSpace:
    """The declared memory space of one entry output and where that declaration came from."""

    host: bool
    source: str  # "entry_computation_layout" | "out_memory_spaces" | "ROOT shape" | "--host-outputs"
    known: bool  # False when the text records no memory kinds at all (jax `lowered.as_text()`)
    layout: str  # the declared shape text of that output
    # --host-outputs named this output but the dump itself declares it in device memory: the dump wins
    # (the option only fills in outputs whose memory space the dump does not record).
    option_overruled: bool = False


@dataclass(frozen=True)
class OutputHit:
    """A walk reaching the entry ROOT at `output_index`; `ok` when the output is declared in host memory."""

    offload: Offload
    output_index: Index
    output_leaves: tuple[int, ...]
    declared: OutputSpace
    path: tuple[Step, ...]  # origin ... start ... ROOT

    @property
    def ok(self) -> bool:
        return self.declared.host


@dataclass
class HostOffloadAnalysis:
    """Everything the walks found; built by `analyze(module)`."""

    module: Module
    offloads: list[Offload] = field(default_factory=list)
    hits: list[OutputHit] = field(default_factory=list)
    parents: dict[Key, Key | None] = field(default_factory=dict)  # how each node was first reached
    host_values: set[Key] = field(default_factory=set)  # every (instruction, index) a walk made host memory
    host_compute: list[Key] = field(default_factory=list)  # walked ops XLA turns into host compute

    @property
    def mismatches(self) -> list[OutputHit]:
        return [h for h in self.hits if not h.ok]

    @property
    def first_mismatch(self) -> OutputHit | None:
        """The error XLA would report: it stops at the first offending walk."""
        bad = self.mismatches
        return min(bad, key=lambda h: h.offload.order) if bad else None


# ----------------------------------------------------------------------------------------------------
# Module indexes


class _Index:
    """Users, callers and entry declarations of a module, read from its dataflow graph.

    Users and callers come from the module's graph (operand and return edges): building it measured about
    twice as fast as this class's own index did on a 346k-instruction dump, and other analyses share it.
    """

    def __init__(self, module: Module, host_outputs: Iterable[int] | None):
        self.module = module
        self.comps = module.computations_by_name
        self.entry = module.entry
        self.succ = module.graph.succ
        self.nodes = module.graph.nodes
        self.host_outputs = None if host_outputs is None else frozenset(host_outputs)
        self.entry_layout = _entry_layout(module)
        self.out_spaces = _out_memory_spaces(module)
        self.records_spaces = self._records_memory_spaces()

    def users(self, comp: str, name: str) -> list[tuple[Instruction, int, Index]]:
        """(user, operand slot, the operand's `#i` tuple index) for every use of an instruction's value."""
        out = []
        for target, edge in self.succ[(comp, name)].items() if (comp, name) in self.succ else ():
            if edge.get("kind") == "operand":
                user = self.nodes[target]["inst"]
                out.extend((user, pos, user.operands[pos].tuple_index) for pos in edge["indices"])
        return out

    def callers(self, callee: str) -> list[tuple[Computation, Instruction]]:
        """The call sites whose result is the callee's ROOT (call, while, conditional, fusion, async, ...)."""
        computation = self.comps.get(callee)
        root = (callee, computation.root.name) if computation is not None and computation.instructions else None
        if root is None or root not in self.succ:
            return []
        out = []
        for site, edge in self.succ[root].items():
            if edge.get("kind") == "return" and edge.get("callee") == callee:
                inst = self.nodes[site]["inst"]
                if inst.opcode in _CALLER_OPCODES:
                    out.append((self.comps[site[0]], inst))
        return out

    def _records_memory_spaces(self) -> bool:
        """Whether the text states memory spaces at all (else: jax `as_text()`, which drops memory kinds)."""
        if self.out_spaces is not None:
            return True
        params, result = self.entry_layout if self.entry_layout is not None else self._printed_entry_shapes()
        shapes = list(params) + ([result] if result is not None else [])
        if any(leaf.memory_space for s in shapes for _, leaf in s.leaves()):
            return True
        # Internal MoveToHost/MoveToDevice only appear after XLA's own conversion, whose layouts are complete.
        moves = MOVE_TO_HOST | MOVE_TO_DEVICE
        return any(_target(inst) in moves for _, inst in self.module.with_opcode("custom-call"))

    def _printed_entry_shapes(self) -> tuple[list[Shape], Shape | None]:
        params = [p.shape for _, p in sorted(self.entry.parameter_instructions.items()) if p.shape is not None]
        return params, self.entry.root.shape

    def comp(self, name: str) -> Computation:
        return self.comps[name]

    def inst(self, comp: str, name: str) -> Instruction:
        return self.comps[comp].by_name[name]

    def operand_shape(self, comp: str, inst: Instruction, pos: int = 0) -> Shape | None:
        return self.comps[comp].operand_shape(inst, pos)

    # -- declared outputs

    def result_shape(self) -> Shape | None:
        if self.entry_layout is not None:
            return self.entry_layout[1]
        return self.entry.root.shape

    def output_space(self, index: Index) -> tuple[OutputSpace, tuple[int, ...]]:
        result = self.result_shape()
        leaves = _leaf_numbers(result, index)
        sub = result.at(index) if result is not None else None
        layout = sub.to_text() if sub is not None else "?"
        if self.entry_layout is not None and sub is not None:
            host, source = _all_host(sub), "entry_computation_layout"
        elif self.out_spaces is not None and leaves and max(leaves) < len(self.out_spaces):
            host, source = all(self.out_spaces[n] == HOST_MEMORY_SPACE for n in leaves), "out_memory_spaces"
            layout = f"{layout} (out_memory_spaces {';'.join(str(self.out_spaces[n]) for n in leaves)})"
        else:
            host, source = (sub is not None and _all_host(sub)), "ROOT shape"
        listed = self.host_outputs is not None and bool(leaves) and all(n in self.host_outputs for n in leaves)
        overruled = False
        if not host and listed:
            if self.records_spaces:
                overruled = True  # the dump's declaration wins: XLA compiles what the dump says
            else:
                host, source = True, "--host-outputs"
        known = self.records_spaces or self.host_outputs is not None
        return OutputSpace(host, source, known, layout, overruled), leaves


def _target(inst: Instruction) -> str | None:
    return inst.custom_call_target if inst.opcode == "custom-call" else None


def _placement(inst: Instruction) -> str | None:
    raw = inst.attr("frontend_attributes")
    return parse_frontend_attributes(raw).get("_xla_buffer_placement") if raw else None


def is_move_to_host(inst: Instruction) -> bool:
    target = _target(inst)
    if target in MOVE_TO_HOST:
        return True
    return target == "annotate_device_placement" and _placement(inst) in HOST_PLACEMENTS


def is_move_to_device(inst: Instruction) -> bool:
    target = _target(inst)
    if target in MOVE_TO_DEVICE:
        return True
    return target == "annotate_device_placement" and _placement(inst) == "device"


def _entry_layout(module: Module) -> tuple[list[Shape], Shape] | None:
    raw = module.attr("entry_computation_layout")
    if not raw:
        return None
    try:
        return parse_computation_layout(raw)
    except Exception:  # noqa: BLE001 - a malformed header means "no layout", as for a dump without one
        log.debug("unparsable entry_computation_layout", exc_info=True)
        return None


def _out_memory_spaces(module: Module) -> list[int] | None:
    raw = parse_frontend_attributes(module.attr("frontend_attributes")).get("out_memory_spaces")
    if raw is None:
        return None
    try:
        return [int(x) for x in raw.split(";") if x.strip()]
    except ValueError:
        return None


def _all_host(shape: Shape) -> bool:
    # NOTE: XLA reads the memory space of the subshape itself, so a whole tuple at the ROOT is never "host";
    # we accept a tuple whose leaves are all S(5), the only sensible declaration a user can write.
    return all(leaf.memory_space == HOST_MEMORY_SPACE for _, leaf in shape.leaves())


def _leaf_numbers(shape: Shape | None, index: Index) -> tuple[int, ...]:
    """Flat output numbers (jax's output order) of the leaves at or under a shape index."""
    if shape is None:
        return ()
    return tuple(n for n, (idx, _) in enumerate(shape.leaves()) if idx[: len(index)] == index)


# ----------------------------------------------------------------------------------------------------
# Successors (host_offload_utils::GetSuccessors)


def _successors(ix: _Index, comp: str, inst: Instruction, index: Index) -> Iterator[tuple[str, Instruction, Index]]:
    computation = ix.comp(comp)
    if inst is computation.root and computation is not ix.entry:
        for caller_comp, caller in ix.callers(comp):
            yield caller_comp.name, caller, index
    for user, pos, operand_tuple_index in ix.users(comp, inst.name):
        value_index = index
        if operand_tuple_index:  # compact `%t#1` operand: an implicit get-tuple-element
            if value_index[: len(operand_tuple_index)] != operand_tuple_index:
                continue
            value_index = value_index[len(operand_tuple_index):]
        yield from _user_successors(ix, comp, user, pos, value_index)


def _user_successors(ix: _Index, comp: str, user: Instruction, pos: int, index: Index):
    op = user.opcode
    if op == "tuple":
        yield comp, user, (pos,) + index
    elif op == "get-tuple-element":
        wanted = parse_int_list(user.attr("index"))
        if not index:  # XLA CHECK-fails here; a whole host tuple makes every element host
            yield comp, user, ()
        elif wanted and index[0] == wanted[0]:
            yield comp, user, index[1:]
    elif op in ("call", "async-start"):
        for callee in _callees(user, ("to_apply", "calls", "called_computations")):
            yield from _parameter(ix, callee, pos, index)
    elif op == "while":
        for callee in _callees(user, ("body", "condition")):
            yield from _parameter(ix, callee, pos, index)
    elif op == "conditional":
        if pos >= 1:  # operand 0 is the predicate
            branches = _callees(user, ("branch_computations", "true_computation", "false_computation"))
            if pos - 1 < len(branches):
                yield from _parameter(ix, branches[pos - 1], 0, index)
    elif op == "custom-call":
        if is_move_to_host(user) or is_move_to_device(user) or _target(user) in PIPELINE_TRANSPARENT:
            yield comp, user, index
        elif _aliases_operand(user, pos):
            yield comp, user, index
    else:
        yield comp, user, index


def _callees(inst: Instruction, attrs: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for attr in attrs:
        if attr + "=" in inst.attrs_text:
            out.extend(parse_name_list(inst.attr(attr)))
    return out


def _parameter(ix: _Index, callee: str, number: int, index: Index):
    comp = ix.comps.get(callee)
    if comp is not None and number in comp.parameter_instructions:
        yield callee, comp.parameter_instructions[number], index


def _aliases_operand(inst: Instruction, pos: int) -> bool:
    raw = inst.attr("output_to_operand_aliasing")
    if not raw:
        return False
    # `{{}: (0, {})}`: output index -> (operand number, operand index)
    import re

    return any(int(m.group(1)) == pos for m in re.finditer(r":\s*\(\s*(\d+)\s*,", raw))


# ----------------------------------------------------------------------------------------------------
# Starting instructions (HostOffloader::GetStartingInstructions, plus the inlining view for names)


def _reshape_is_bitcast(ix: _Index, comp: str, inst: Instruction) -> bool:
    before, after = ix.operand_shape(comp, inst), inst.shape
    if before is None or after is None:
        return True
    if _row_major(before) and _row_major(after):
        return True  # a row-major reshape never moves bytes
    return [d for d in before.dims if d != 1] == [d for d in after.dims if d != 1]


def _row_major(shape: Shape) -> bool:
    layout = shape.layout
    if layout is None:
        return True
    return not layout.tiles and list(layout.minor_to_major) == list(range(len(shape.dims) - 1, -1, -1))


def _allowed_before_start(ix: _Index, comp: str, inst: Instruction) -> bool:
    """InstructionIsAllowedBetweenMoveToHostAndDus, plus the annotations the pipeline has removed by then."""
    if inst.opcode == "reshape":
        return _reshape_is_bitcast(ix, comp, inst)
    return inst.opcode in ("bitcast", "copy") or _target(inst) in PIPELINE_TRANSPARENT


def _inlined_away(ix: _Index, comp: str, inst: Instruction, index: Index) -> list[tuple[str, Instruction, Index]] | None:
    """Where the value goes once calls are inlined and tuple/get-tuple-element pairs simplified, or None.

    The TPU pipeline runs CallInliner and TupleSimplifier before HostOffloader, so the instruction XLA names
    as "starting from" is the first one that survives them.
    """
    computation = ix.comp(comp)
    if inst.opcode == "parameter" and computation is not ix.entry:
        callers = ix.callers(comp)
        if callers and all(c.opcode == "call" for _, c in callers):
            return [(comp, inst, index)]  # the parameter becomes the caller's operand
        return None
    if inst.opcode != "tuple" or not index:
        return None
    if inst is computation.root:
        if computation is ix.entry:
            return None
        callers = ix.callers(comp)
        if not callers or not all(c.opcode == "call" for _, c in callers):
            return None
        consumers = [(cc.name, c) for cc, c in callers]
    else:
        consumers = [(comp, inst)]
    out = []
    for consumer_comp, consumer in consumers:
        users = ix.users(consumer_comp, consumer.name)
        if not users or any(u.opcode != "get-tuple-element" for u, _, _ in users):
            return None
        for user, _, _ in users:
            wanted = parse_int_list(user.attr("index"))
            if wanted and wanted[0] == index[0]:
                out.append((consumer_comp, user, index[1:]))
    return out


def _starting_points(ix: _Index, comp: str, inst: Instruction, parents: dict[Key, Key | None]) -> list[Key]:
    """The (instruction, index) pairs the walks start from, recording how each was reached in `parents`."""
    origin: Key = (comp, inst.name, ())
    parents.setdefault(origin, None)
    starts: list[Key] = []
    queue = deque([(origin, s) for s in _successors(ix, comp, inst, ())])
    seen: set[Key] = {origin}
    while queue:
        parent, (c, node, index) = queue.popleft()
        key = (c, node.name, index)
        if key in seen:
            continue
        seen.add(key)
        parents.setdefault(key, parent)
        if node.opcode != "dynamic-update-slice" and _allowed_before_start(ix, c, node):
            queue.extend((key, s) for s in _successors(ix, c, node, index))
            continue
        through = None if node.opcode == "dynamic-update-slice" else _inlined_away(ix, c, node, index)
        if through is None:
            starts.append(key)
            continue
        for nc, nxt, nidx in through:
            if nxt.opcode == "parameter":
                queue.extend((key, s) for s in _successors(ix, nc, nxt, nidx))
            else:  # a get-tuple-element that TupleSimplifier removes: continue at its users
                gkey = (nc, nxt.name, nidx)
                parents.setdefault(gkey, key)
                seen.add(gkey)
                queue.extend((gkey, s) for s in _successors(ix, nc, nxt, nidx))
    return starts


# ----------------------------------------------------------------------------------------------------
# The walk (HostOffloader::WalkDownHostMemoryOffloadPaths)


def _slice_is_dma_to_device(ix: _Index, comp: str, inst: Instruction) -> bool:
    """SliceLeadsToMoveToDeviceCustomCall: every use reaches a MoveToDevice through plumbing only."""
    queue = deque(_successors(ix, comp, inst, ()))
    seen: set[Key] = set()
    if not queue:
        return False
    while queue:
        c, node, index = queue.popleft()
        key = (c, node.name, index)
        if key in seen:
            continue
        seen.add(key)
        if is_move_to_device(node):
            continue
        if not _allowed_after_slice(ix, c, node):
            return False
        nxt = list(_successors(ix, c, node, index))
        if not nxt:
            return False
        queue.extend(nxt)
    return True


def _allowed_after_slice(ix: _Index, comp: str, inst: Instruction) -> bool:
    if inst.opcode == "reshape":
        return _reshape_is_bitcast(ix, comp, inst)
    if inst.opcode == "reduce":
        before, after = ix.operand_shape(comp, inst), inst.shape
        return before is not None and after is not None and \
            sum(d != 1 for d in before.dims) == sum(d != 1 for d in after.dims)
    return inst.opcode in _DS_TO_DEVICE_OPS or _target(inst) in PIPELINE_TRANSPARENT


def _is_host_compute(ix: _Index, comp: str, inst: Instruction) -> bool:
    if inst.opcode in PURE_MEMORY_OPS or inst.opcode == "dynamic-update-slice":
        return False
    if inst.opcode == "copy":
        return False  # a host-to-host copy is legal; a layout-changing copy is moved out by legalize
    return True


class _Walker:
    def __init__(self, ix: _Index, result: HostOffloadAnalysis):
        self.ix = ix
        self.result = result
        self.parents = result.parents
        self.visited = result.host_values
        self.moved: set[tuple[str, str]] = set()  # MoveToHost calls a walk passed through or handled

    def walk(self, offload: Offload) -> None:
        start = (offload.start.computation, offload.start.instruction, offload.start.index)
        if start in self.visited:
            return
        self.visited.add(start)
        queue = deque([start])
        while queue:
            key = queue.popleft()
            comp, name, index = key
            inst = self.ix.inst(comp, name)
            if is_move_to_host(inst):
                self.moved.add((comp, name))
            if self._ends_here(comp, inst):
                continue
            if _is_host_compute(self.ix, comp, inst):
                self.result.host_compute.append(key)
            if inst is self.ix.entry.root and comp == self.ix.entry.name:
                self._output(offload, key)
                continue
            for c, nxt, nidx in _successors(self.ix, comp, inst, index):
                nkey = (c, nxt.name, nidx)
                if nkey in self.visited:  # an earlier walk (or this one) already made it host memory
                    continue
                self.visited.add(nkey)
                self.parents.setdefault(nkey, key)
                queue.append(nkey)

    def _ends_here(self, comp: str, inst: Instruction) -> bool:
        if is_move_to_device(inst):
            return True
        if inst.opcode in ("dynamic-slice", "slice"):
            return _slice_is_dma_to_device(self.ix, comp, inst)
        return False

    def _output(self, offload: Offload, key: Key) -> None:
        declared, leaves = self.ix.output_space(key[2])
        path = tuple(self._path(key))
        self.result.hits.append(OutputHit(offload, key[2], leaves, declared, path))

    def _path(self, key: Key) -> list[Step]:
        chain: list[Key] = []
        seen: set[Key] = set()
        cursor: Key | None = key
        while cursor is not None and cursor not in seen:
            seen.add(cursor)
            chain.append(cursor)
            cursor = self.parents.get(cursor)
        return [self.step(k) for k in reversed(chain)]

    def step(self, key: Key) -> Step:
        inst = self.ix.inst(key[0], key[1])
        return Step(key[0], key[1], key[2], inst.opcode, inst.line)


# ----------------------------------------------------------------------------------------------------
# Driver (HostOffloader::Run order)


def analyze(module: Module, host_outputs: Iterable[int] | None = None) -> HostOffloadAnalysis:
    """Replay the host-offload walks of `module`; `host_outputs` adds outputs declared in host memory."""
    if not may_start_offload(module):
        # Every walk starts at one of these; without any, indexing 5,000 computations finds nothing.
        return HostOffloadAnalysis(module)
    ix = _Index(module, host_outputs)
    result = HostOffloadAnalysis(module)
    walker = _Walker(ix, result)
    order = 0
    for offload in _offloads(ix, walker):
        offload = Offload(offload.kind, offload.origin, offload.start, order)
        order += 1
        result.offloads.append(offload)
        walker.walk(offload)
    return result


# Custom-call targets a walk can start from (MoveToHost, its frontend form, a kernel with a host output).
_START_TARGETS = MOVE_TO_HOST | {"annotate_device_placement", "tpu_custom_call"}


def may_start_offload(module: Module) -> bool:
    """A cheap over-approximation of "some walk starts here": a host-memory entry parameter (declared in
    the header layout or printed), or a custom call that can move a value to host. False means `analyze`
    finds nothing, so it can skip its indexes."""
    layout = module.attr("entry_computation_layout")
    if layout and "S(" in layout:
        return True
    for inst in module.entry.parameter_instructions.values():
        if inst.shape is not None and any(leaf.memory_space == HOST_MEMORY_SPACE for _, leaf in inst.shape.leaves()):
            return True
    return any(inst.opcode == "custom-call" and _target(inst) in _START_TARGETS
               for comp in module.computations for inst in comp.instructions)


def _offloads(ix: _Index, walker: _Walker) -> Iterator[Offload]:
    yield from _parameter_offloads(ix, walker)
    yield from _kernel_offloads(ix, walker)
    yield from _move_to_host_offloads(ix, walker, ix.entry, set())


def _parameter_offloads(ix: _Index, walker: _Walker) -> Iterator[Offload]:
    params = ix.entry_layout[0] if ix.entry_layout is not None else ix._printed_entry_shapes()[0]
    for number, shape in enumerate(params):
        inst = ix.entry.parameter_instructions.get(number)
        if inst is None:
            continue
        for index, leaf in shape.leaves():
            if leaf.memory_space == HOST_MEMORY_SPACE:
                key = (ix.entry.name, inst.name, index)
                walker.parents.setdefault(key, None)
                step = walker.step(key)
                yield Offload("host-parameter", step, step, 0)


def _kernel_offloads(ix: _Index, walker: _Walker) -> Iterator[Offload]:
    for comp, inst in ix.module.with_opcode("custom-call"):
        if _target(inst) != "tpu_custom_call" or inst.shape is None:
            continue
        for index, leaf in inst.shape.leaves():
            if leaf.memory_space == HOST_MEMORY_SPACE:
                key = (comp.name, inst.name, index)
                walker.parents.setdefault(key, None)
                step = walker.step(key)
                yield Offload("kernel-output", step, step, 0)


def _move_to_host_offloads(ix: _Index, walker: _Walker, comp: Computation, done: set[str]) -> Iterator[Offload]:
    """ProcessNextMoveToHostInstr: the entry in post-order, descending into callees as they are reached."""
    done.add(comp.name)
    for inst in post_order(comp, ix):
        if is_move_to_host(inst) and (comp.name, inst.name) not in walker.moved:
            # A MoveToHost an earlier walk passed through is a no-op (already_visited_move_to_host_custom_calls_).
            walker.moved.add((comp.name, inst.name))
            origin = walker.step((comp.name, inst.name, ()))
            for start in _starting_points(ix, comp.name, inst, walker.parents):
                yield Offload("move-to-host", origin, walker.step(start), 0)
        if "=" in inst.attrs_text:
            for _attr, callee in called_computations(inst):
                if callee not in done and callee in ix.comps:
                    yield from _move_to_host_offloads(ix, walker, ix.comps[callee], done)


def post_order(comp: Computation, ix: _Index | None = None) -> list[Instruction]:
    """HloComputation::MakeInstructionPostOrder: DFS from every user-less instruction, first operand first."""
    by_name = comp.by_name
    has_users = set()
    for inst in comp.instructions:
        has_users.update(n for n in inst.operand_names if n in by_name)
    order: list[Instruction] = []
    state: dict[str, int] = {}
    for root in comp.instructions:
        if root.name in has_users or root.name in state:
            continue
        stack = [root]
        while stack:
            node = stack[-1]
            mark = state.get(node.name)
            if mark == 2:
                stack.pop()
            elif mark == 1:
                stack.pop()
                state[node.name] = 2
                order.append(node)
            else:
                state[node.name] = 1
                preds = [by_name[n] for n in node.operand_names if n in by_name]
                preds += [by_name[n] for n in parse_name_list(node.attr("control-predecessors")) if n in by_name]
                stack.extend(p for p in reversed(preds) if state.get(p.name) is None)
    return order


# ----------------------------------------------------------------------------------------------------
# The name XLA gives the start instruction by the time the offloader runs


class _NameUniquer:
    """xla::NameUniquer: `base.N` registers id N of `base` (a bare `base` is id 0); a taken id gets the next free
    one from a per-base counter that starts at 0 and only moves on collisions."""

    def __init__(self) -> None:
        self.used: dict[str, set[int]] = {}
        self.next: dict[str, int] = {}

    def get(self, name: str) -> str:
        base, dot, suffix = name.rpartition(".")
        # XLA reads the suffix with absl::SimpleAtoi into an int64: one that does not fit leaves the name whole.
        numbered = bool(dot) and bool(base) and suffix.isascii() and suffix.isdigit() and len(suffix) <= 19 and int(suffix) < 2**63
        if not numbered:
            base, number = name, 0
        else:
            number = int(suffix)
        used = self.used.setdefault(base, set())
        if number in used:
            number = self.next.get(base, 0)
            while number in used:
                number += 1
            self.next[base] = number + 1
        used.add(number)
        if number == 0:
            return f"{base}.0" if numbered else base
        return f"{base}.{number}"


def _computation_post_order(module: Module) -> list[str]:
    """Computations reachable from the entry, callees before callers (CallGraph::VisitNodes)."""
    comps = module.computations_by_name
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        seen.add(name)
        for inst in post_order(comps[name]):
            if "=" in inst.attrs_text:
                for _attr, callee in called_computations(inst):
                    if callee in comps and callee not in seen:
                        visit(callee)
        order.append(name)

    visit(module.entry.name)
    return order


def xla_names(module: Module) -> dict[tuple[str, str], str]:
    """(computation, instruction) in the dump -> the name XLA's host offloader sees, where it differs.

    Two renames happen before the offloader, both through the module's NameUniquer:
    * CallInliner (first pipeline) clones every instruction of a `call`ed computation into the caller, in
      post order, callees first; the clone asks for the original name, which is taken, so it gets the next
      free id of its base (`dynamic-update-slice.1` -> `dynamic-update-slice.0`).
    * Layout assignment copies the entry ROOT tuple when the entry result layout puts a leaf in another memory
      space (S(5)) than the ROOT's shape; the copy is cleaned up but its fresh ROOT `tuple` stays
      (`tuple.1` -> `tuple`, or the next free `tuple.N`).
    Not modelled: passes that rebuild instructions in between (while-loop simplifier dropping loop elements
    rebuilds the init tuple, the number depends on every tuple created before it).
    """
    uniquer = _NameUniquer()
    for _comp, inst in module.instructions():
        uniquer.get(inst.name)
    comps = module.computations_by_name
    # current[c] = the instructions of computation c after its own calls were inlined: (origin key, name)
    current: dict[str, list[tuple[tuple[str, str], str]]] = {}
    renamed: dict[tuple[str, str], str] = {}
    for name in _computation_post_order(module):
        seq: list[tuple[tuple[str, str], str]] = []
        for inst in post_order(comps[name]):
            callee = inst.attr("to_apply") if inst.opcode == "call" else None
            callee = callee.lstrip("%") if callee else None
            if callee in current:
                for origin, cur in current[callee]:
                    if comps[origin[0]].by_name[origin[1]].opcode == "parameter":
                        continue
                    new = uniquer.get(cur)
                    renamed[origin] = new  # nested calls: the outermost clone is the one left
                    seq.append((origin, new))
            else:
                seq.append(((name, inst.name), inst.name))
        current[name] = seq
    root = module.entry.root
    entry_layout = _entry_layout(module)
    if root is not None and root.opcode == "tuple" and entry_layout is not None and root.shape is not None:
        result = entry_layout[1]
        printed = dict(root.shape.leaves())
        if any(leaf.memory_space != getattr(printed.get(index), "memory_space", 0) for index, leaf in result.leaves()):
            renamed[(module.entry.name, root.name)] = uniquer.get("tuple")
    return renamed
