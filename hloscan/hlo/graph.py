"""The dataflow graph of a module: one networkx DiGraph across all computations.

Nodes are `(computation name, instruction name)` with attributes `inst` (the Instruction) and `comp`.
Edges run from producer to consumer with `kind`:
  operand   operand edge; `index` is the first operand slot, `indices` all of them (an op may use a value twice)
  control   control-predecessors ordering
  call      a call site's operand bound to the callee's parameter (`index` = operand slot)
  return    a callee's ROOT flowing back to its call site (`callee` names the computation)
  loop      a while body's ROOT flowing back to the body's and condition's parameter
"""

from __future__ import annotations

import functools
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Iterable

from hloscan.hlo.attrs import CALL_ATTRS, parse_name_list
from hloscan.hlo.gcpause import gc_paused

# Module, Computation and Instruction in the annotations below are hloscan.hlo.ir's, named but not imported:
# ir builds the graph (Module.graph), so this module must not import ir, not even for type checking.

if TYPE_CHECKING:  # networkx is imported when a graph is built: checks that never build one skip its import
    import networkx as nx

Node = tuple[str, str]
_NAME = attrgetter("name")

# Attributes naming computations an instruction calls, and how its operands bind to their parameters.
# Applied computations (reductions, comparators) take element values, not the operands themselves.
_APPLY_ONLY = frozenset({"to_apply", "select", "scatter"})
_CALLING_OPCODES = frozenset({"fusion", "call", "while", "conditional", "custom-call", "async-start", "map",
                               "reduce", "reduce-window", "all-reduce", "reduce-scatter", "sort", "scatter",
                               "select-and-scatter", "scan"})
_ASYNC_SUFFIXES = ("-start", "-update", "-done")
_APPLY_OPCODES = frozenset({"reduce", "reduce-window", "all-reduce", "all-reduce-start", "reduce-scatter", "sort",
                            "map", "scatter", "select-and-scatter", "scan"})


def build_graph(module: Module, computations: frozenset[str] | None = None) -> nx.DiGraph:
    """The module's graph; with `computations`, the subgraph it induces on their instructions (the same
    nodes, edges, edge data and neighbour order as `module.graph.subgraph(...)`), built from those alone."""
    with gc_paused():
        nodes, succ, pred, callers, names = _adjacency(module, computations)
        edges = _Edges(succ, pred, names)
        for comp, inst in callers:
            _add_call_edges(edges, module, comp, inst, computations)
        return _digraph_from_adjacency(module.name, nodes, succ, pred)


def neighbourhood_graph(module: Module, centre: Node, depth: int) -> nx.DiGraph:
    """A subgraph of the module's graph holding every node within `depth` edges of `centre` (either
    direction) and every edge among them: the subgraph induced by enough computations, grown until a walk
    of `depth` edges stays inside them. `hloscan graph --around` on a 48 MB dump builds this instead of the
    whole graph (two of its five seconds).

    An edge joins two computations only at a call site (call edges from its operands to the callee's
    parameters, return edges from the callee's ROOT) or a while (loop edges from the body's ROOT to the
    body's and condition's parameters); so a node that may have a neighbour outside is a call site, an
    operand of one, a parameter or a ROOT, and the computations it may reach are named by `_beyond`."""
    computations = {centre[0]}
    callers: dict[str, list[tuple[Computation, Instruction]]] | None = None
    entry = module.entry.name
    while True:
        graph = build_graph(module, frozenset(computations))
        near = _within(graph, centre, depth - 1)
        # Only a called computation's parameters and ROOT lead to its call sites: nothing calls the ENTRY.
        needs_callers = any(node[0] != entry and _is_parameter_or_root(module, node) for node in near)
        if needs_callers and callers is None:
            callers = _callers_by_callee(module)
        wanted = _beyond(module, graph, near, callers or {})
        if wanted <= computations:
            return graph
        computations |= wanted


def _within(graph: nx.DiGraph, centre: Node, hops: int) -> set[Node]:
    """The nodes at most `hops` edges from `centre`, either direction (none when hops < 0)."""
    if hops < 0 or centre not in graph.succ:
        return set()
    reached, frontier = {centre}, {centre}
    for _ in range(hops):
        frontier = {m for n in frontier for m in (*graph.succ[n], *graph.pred[n])} - reached
        reached |= frontier
    return reached


def _is_parameter_or_root(module: Module, node: Node) -> bool:
    comp = module.computations_by_name[node[0]]
    return comp.by_name[node[1]].opcode == "parameter" or comp.root.name == node[1]


def _callers_by_callee(module: Module) -> dict[str, list[tuple[Computation, Instruction]]]:
    out: dict[str, list[tuple[Computation, Instruction]]] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if may_call(inst):
                for _, callee in called_computations(inst):
                    out.setdefault(callee, []).append((comp, inst))
    return out


def _beyond(module: Module, graph: nx.DiGraph, near: set[Node],
            callers: dict[str, list[tuple[Computation, Instruction]]]) -> set[str]:
    """The computations the edges of the nodes `near` may lead to."""
    out: set[str] = set()

    def callees(comp: str, name: str) -> None:
        inst = module.computations_by_name[comp].by_name[name]
        if may_call(inst):
            out.update(callee for _, callee in called_computations(inst))

    for node in near:
        callees(*node)  # return edges from its callees' ROOTs
        for user in graph.succ[node]:
            if user[0] == node[0]:
                callees(*user)  # call edges from this operand to the user's callee parameters
        if _is_parameter_or_root(module, node):
            for comp, site in callers.get(node[0], ()):  # call and return edges; loop edges via the while
                out.add(comp.name)
                callees(comp.name, site.name)
    return out


class _Edges:
    """Adds edges straight into the adjacency dicts (networkx's add_edge cost 0.3 s per 100k edges).

    `names` maps a computation's name to its {instruction name: node} dict (see _adjacency): an edge's ends
    are looked up there, so the edge dicts are keyed by the one node tuple of each instruction instead of
    a fresh equal tuple per edge (less memory, fewer page faults on a big dump), and `add` needs no tuple."""

    def __init__(self, succ: dict, pred: dict, names: dict[str, dict[str, Node]]):
        self.succ, self.pred, self.names = succ, pred, names

    def __contains__(self, node: Node) -> bool:
        return node in self.succ

    def node(self, computation: str, name: str) -> Node | None:
        """The node of instruction `name` of `computation`, None when it is no node of this graph."""
        names = self.names.get(computation)
        return names.get(name) if names is not None else None

    def add(self, u: Node, v: Node, **data) -> None:
        u, v = self.node(*u), self.node(*v)
        if u is not None and v is not None:
            self.succ[u][v] = self.pred[v][u] = data


def may_call(inst: Instruction) -> bool:
    """Whether an instruction may call computations: cheap tests, its attributes are parsed for callers only."""
    tail = inst.attrs_text
    if not tail:
        return False
    opcode = inst.opcode
    return (opcode in _CALLING_OPCODES or opcode.endswith(_ASYNC_SUFFIXES) or "computation" in tail
            or "calls=" in tail or "to_apply=" in tail)


def _whiles_by_computation(module: Module) -> dict[str, list[tuple[Computation, Instruction]]]:
    """The while instructions of each computation, in order (from the module's memoized opcode index, so a
    subgraph of a few computations does not look at every instruction of the others)."""
    out: dict[str, list[tuple[Computation, Instruction]]] = {}
    for comp, inst in module.with_opcode("while"):
        out.setdefault(comp.name, []).append((comp, inst))
    return out


def _adjacency(module: Module, computations: frozenset[str] | None = None):
    """Node and edge dicts for operand and control edges, built in plain dicts in one pass (the hot part),
    the instructions that may call computations, and each computation's {instruction name: node}.

    Operands are defined before use (XLA's rule, checked by validate.py), so each source node exists by
    the time an edge reaches it; a name that does not is skipped rather than invented. With `computations`,
    only their instructions are nodes, and only their call sites are callers, plus every while: its loop
    edges join its body and condition, which may both be among them while its own computation is not.

    Operand names are resolved in small per-computation dicts (name -> node, name -> successor dict), not
    by a fresh (computation, name) tuple looked up in the module-wide dicts: no tuple per edge, and lookups
    that stay in cache. The module-wide dicts are filled once per computation, in C. Computations that share
    a name share these dicts, so every lookup gives what the module-wide dicts would.
    """
    nodes: dict[Node, dict] = {}
    succ: dict[Node, dict] = {}
    pred: dict[Node, dict] = {}
    callers: list[tuple[Computation, Instruction]] = []  # for the call edges, added once all nodes exist
    names: dict[str, dict[str, Node]] = {}
    successors: dict[str, dict[str, dict]] = {}
    whiles = _whiles_by_computation(module) if computations is not None else {}
    for comp in module.computations:
        cname = comp.name
        if computations is not None and cname not in computations:
            callers.extend(whiles.get(cname, ()))
            continue
        node_of = names.setdefault(cname, {})
        out_of = successors.setdefault(cname, {})
        insts = comp.instructions
        targets = list(zip(repeat(cname), map(_NAME, insts)))
        outs = [{} for _ in insts]
        ins = [{} for _ in insts]
        for inst, target, out, incoming in zip(insts, targets, outs, ins):
            name = target[1]
            node_of[name] = target
            out_of[name] = out
            index = 0
            for operand in inst.operands:
                outgoing = out_of.get(operand.name)
                if outgoing is not None:
                    source = node_of[operand.name]
                    data = incoming.get(source)
                    if data is None:
                        incoming[source] = outgoing[target] = {"kind": "operand", "index": index, "indices": [index]}
                    else:
                        data["indices"].append(index)
                index += 1
            tail = inst.attrs_text
            if tail:
                if "control-predecessors" in tail:
                    _add_control_edges(inst, target, node_of, out_of, incoming)
                if may_call(inst):
                    callers.append((comp, inst))
        nodes.update(zip(targets, [{"inst": inst, "comp": cname} for inst in insts]))
        succ.update(zip(targets, outs))
        pred.update(zip(targets, ins))
    return nodes, succ, pred, callers, names


def _add_control_edges(inst: Instruction, target: Node, node_of: dict[str, Node], out_of: dict[str, dict],
                       incoming: dict) -> None:
    for name in parse_name_list(inst.attr("control-predecessors")):
        source = node_of.get(name)
        if source is not None and source not in incoming:
            incoming[source] = out_of[name][target] = {"kind": "control"}


def _digraph_from_adjacency(name: str, nodes: dict, succ: dict, pred: dict) -> nx.DiGraph:
    """Wrap ready-made adjacency dicts in a DiGraph.

    NOTE: this fills networkx's storage dicts (`_node`, `_adj`/`_succ`, `_pred`, the layout its
    subclassing docs describe) directly, because add_nodes_from/add_edges_from took 2.6 s on a
    346k-instruction dump. tests/test_graph.py checks the result equals a build through the public API.
    """
    graph = _acyclic_digraph_class()(module=name)
    graph._node = nodes
    graph._adj = graph._succ = succ
    graph._pred = pred
    return graph


@functools.cache
def _acyclic_digraph_class() -> type[nx.DiGraph]:
    """A DiGraph whose views (`nodes`, `edges`, `degree`...) are made on each access, as in networkx 2.x.

    networkx caches them in the graph's own __dict__, and most of them hold the graph: every graph that
    was asked for `G.nodes` is a reference cycle, freed only by the cyclic collector, which must then
    walk the 4 million objects of a 48 MB dump's IR and graph (2.5 s per collection). Without the cycle
    a dropped module is freed by reference counting, so hlo/gcpause.py can keep it out of collections.
    Made on first use: networkx is imported only when a graph is built.
    """
    import networkx as nx

    views = {name: property(attr.func, doc=attr.__doc__)
             for klass in reversed(nx.DiGraph.__mro__)
             for name, attr in vars(klass).items() if isinstance(attr, functools.cached_property)}
    return type("HloGraph", (nx.DiGraph,), {"__module__": __name__, "__doc__": _acyclic_digraph_class.__doc__,
                                            "size": _size, **views})


def _size(graph: nx.DiGraph, weight: str | None = None) -> int | float:
    """`DiGraph.size` (and so `number_of_edges()`): the unweighted count straight from the successor dicts.
    networkx sums a degree view node by node, 0.26 s on a 346k-instruction dump; this takes 15 ms."""
    if weight is not None:
        return super(type(graph), graph).size(weight)
    return sum(map(len, graph._succ.values()))


def called_computations(inst: Instruction) -> list[tuple[str, str]]:
    """(attribute, computation name) pairs for every computation this instruction calls."""
    out = []
    for attr in CALL_ATTRS:
        if attr + "=" in inst.attrs_text:
            out.extend((attr, name) for name in parse_name_list(inst.attr(attr)))
    return out


def _add_call_edges(graph: "_Edges", module: Module, comp: Computation, inst: Instruction,
                    computations: frozenset[str] | None = None) -> None:
    """Call, return and loop edges of one call site; each has an end in the callee (the loop edges leave
    the body's ROOT), so a callee outside `computations` adds none."""
    site = (comp.name, inst.name)
    for attr, callee_name in called_computations(inst):
        callee = module.computations_by_name.get(callee_name)
        if callee is None or (computations is not None and callee_name not in computations):
            continue
        if attr in _APPLY_ONLY and inst.opcode in _APPLY_OPCODES:
            continue
        params, operands, succ, pred = callee.parameter_instructions, inst.operands, graph.succ, graph.pred
        sources, targets = graph.names.get(comp.name, {}), graph.names.get(callee.name, {})
        # graph.add inlined: a fusion binds every operand, 100k edges on a 48 MB dump
        for slot, param_number in _operand_bindings(inst, attr, callee_name):
            param = params.get(param_number)
            if slot < len(operands) and operands[slot].name and param is not None:
                src, dst = sources.get(operands[slot].name), targets.get(param.name)
                if src is not None and dst is not None:
                    succ[src][dst] = pred[dst][src] = {"kind": "call", "index": slot}
        graph.add((callee.name, callee.root.name), site, kind="return", callee=callee.name)
        if inst.opcode == "while" and attr == "body":
            _add_loop_edges(graph, module, inst, callee)


def _operand_bindings(inst: Instruction, attr: str, callee: str) -> Iterable[tuple[int, int]]:
    """Which operand slot feeds which callee parameter number."""
    if inst.opcode == "conditional":
        if attr in ("true_computation", "false_computation"):
            slot = 1 if attr == "true_computation" else 2
            return [(slot, 0)]
        branches = parse_name_list(inst.attr("branch_computations"))
        return [(branches.index(callee) + 1, 0)] if callee in branches else []
    if inst.opcode == "while":
        return [(0, 0)]
    slots = range(len(inst.operands))
    return zip(slots, slots)  # operand i feeds parameter i


def _add_loop_edges(graph: "_Edges", module: Module, inst: Instruction, body: Computation) -> None:
    targets = [body]
    cond = module.computations_by_name.get(next(iter(parse_name_list(inst.attr("condition"))), ""))
    if cond is not None:
        targets.append(cond)
    for comp in targets:
        param = comp.parameter_instructions.get(0)
        if param is not None:
            graph.add((body.name, body.root.name), (comp.name, param.name), kind="loop")


def producers(graph: nx.DiGraph, node: Node, kinds: frozenset[str] | None = None) -> list[Node]:
    return [u for u, _, d in graph.in_edges(node, data=True) if kinds is None or d["kind"] in kinds]


def users(graph: nx.DiGraph, node: Node, kinds: frozenset[str] | None = None) -> list[Node]:
    return [v for _, v, d in graph.out_edges(node, data=True) if kinds is None or d["kind"] in kinds]
