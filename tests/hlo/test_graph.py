"""The dataflow graph: operand, control, call, return and loop edges, and equality with a public-API build."""

from __future__ import annotations

import networkx as nx

from hloscan.hlo.parser import parse_text

MODULE = """HloModule g

%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4]{0} get-tuple-element(%p), index=1
  %y = f32[4]{0} add(%x, %x)
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %y)
}

%cond (p: (s32[], f32[4])) -> pred[] {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %c = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %c), direction=LT
}

%on_true (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}

%on_false (b: f32[4]) -> f32[4] {
  ROOT %b = f32[4]{0} parameter(0)
}

ENTRY %main (x: f32[4], k: pred[]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %k = pred[] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %x)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  %r = f32[4]{0} get-tuple-element(%w), index=1, control-predecessors={%zero}
  ROOT %c = f32[4]{0} conditional(%k, %r, %x), true_computation=%on_true, false_computation=%on_false
}
"""


def graph():
    (module,) = parse_text(MODULE)
    return module.graph


def edge_kind(g, u, v):
    return g.edges[u, v]["kind"]


def test_operand_edges_keep_all_slots():
    g = graph()
    data = g.edges[("body", "x"), ("body", "y")]
    assert data["kind"] == "operand" and data["indices"] == [0, 1]


def test_control_edge():
    assert edge_kind(graph(), ("main", "zero"), ("main", "r")) == "control"


def test_while_binds_init_to_body_and_condition_and_loops_back():
    g = graph()
    assert edge_kind(g, ("main", "init"), ("body", "p")) == "call"
    assert edge_kind(g, ("main", "init"), ("cond", "p")) == "call"
    assert edge_kind(g, ("body", "t"), ("main", "w")) == "return"
    assert edge_kind(g, ("body", "t"), ("body", "p")) == "loop"


def test_conditional_binds_branch_operands():
    g = graph()
    assert g.edges[("main", "r"), ("on_true", "a")] == {"kind": "call", "index": 1}
    assert g.edges[("main", "x"), ("on_false", "b")] == {"kind": "call", "index": 2}
    assert edge_kind(g, ("on_true", "n"), ("main", "c")) == "return"


def test_nodes_carry_instruction_and_computation():
    g = graph()
    assert g.nodes[("main", "w")]["inst"].opcode == "while"
    assert g.nodes[("main", "w")]["comp"] == "main"


def test_direct_build_equals_public_api_build():
    g = graph()
    rebuilt = nx.DiGraph(module=g.graph["module"])
    rebuilt.add_nodes_from(g.nodes(data=True))
    rebuilt.add_edges_from(g.edges(data=True))
    assert nx.utils.graphs_equal(g, rebuilt)
    assert sorted(g.predecessors(("main", "c"))) == sorted(rebuilt.predecessors(("main", "c")))
    assert g.in_degree(("body", "p")) == rebuilt.in_degree(("body", "p")) == 2  # init (call) and t (loop)


def test_edge_count_is_networkx_count_with_and_without_weights():
    g = graph()
    rebuilt = nx.DiGraph(g.edges(data=True))
    assert g.number_of_edges() == g.size() == rebuilt.number_of_edges() > 0
    assert g.size(weight="index") == rebuilt.size(weight="index")
    assert g.number_of_edges(("main", "c"), ("main", "w")) == rebuilt.number_of_edges(("main", "c"), ("main", "w"))
