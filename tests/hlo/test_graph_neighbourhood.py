"""hlo.graph.neighbourhood_graph, what `hloscan graph --around` builds instead of the whole graph: it holds
every node within `depth` edges of the centre, and is the subgraph the module's graph induces on its nodes
(edges, edge data and neighbour order alike), so the diagram is the one drawn from the whole graph."""

from __future__ import annotations

import pytest

from corpus import corpus_dir
from hloscan.cli.graph import neighbourhood_view, to_dot
from hloscan.hlo.graph import build_graph, neighbourhood_graph
from hloscan.hlo.loader import load_file


def _modules_with_calls():
    """Modules of xla-hlo-files with while loops, conditionals or async calls (several computations)."""
    out = []
    for path in sorted(corpus_dir("xla-hlo-files").rglob("*.hlo")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(word in text for word in (" while(", " conditional(", "-start(")):
            out.extend(m for m in load_file(str(path)).modules if len(m.computations) > 2)
        if len(out) >= 25:
            break
    return out


@pytest.fixture(scope="module")
def modules():
    found = _modules_with_calls()
    assert found, "no module with calls in xla-hlo-files"
    return found


def _centres(module, per_computation: int = 3):
    """A few instructions of every computation: its ROOT, its first parameter, one in the middle."""
    for comp in module.computations[:15]:
        picks = {comp.root.name, comp.instructions[0].name, comp.instructions[len(comp.instructions) // 2].name}
        yield from ((comp.name, name) for name in sorted(picks)[:per_computation])


def _reach(graph, centre, depth: int) -> set:
    reached, frontier = {centre}, {centre}
    for _ in range(depth):
        frontier = {m for n in frontier for m in (*graph.succ[n], *graph.pred[n])} - reached
        reached |= frontier
    return reached


@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_the_neighbourhood_graph_holds_the_walk_and_is_an_induced_subgraph(modules, depth):
    for module in modules:
        full = build_graph(module)
        for centre in _centres(module):
            part = neighbourhood_graph(module, centre, depth)
            nodes = set(part.nodes)
            assert _reach(full, centre, depth) <= nodes, (module.name, centre)
            assert list(part.nodes) == [n for n in full.nodes if n in nodes], (module.name, centre)
            for n in part.nodes:
                assert list(part.succ[n].items()) == [(m, d) for m, d in full.succ[n].items() if m in nodes]
                assert list(part.pred[n].items()) == [(m, d) for m, d in full.pred[n].items() if m in nodes]


def test_around_draws_the_same_diagram_as_from_the_whole_graph(modules):
    for module in modules[:12]:
        for centre in _centres(module, 2):
            for depth in (1, 2, 3):
                module.__dict__.pop("graph", None)
                local = to_dot(neighbourhood_view(module, centre, depth, set()))
                assert module.graph_if_built is None  # the view did not build the whole graph
                module.graph  # noqa: B018  (now built: the view walks the whole graph)
                assert to_dot(neighbourhood_view(module, centre, depth, set())) == local, (module.name, centre)
        module.__dict__.pop("graph", None)


def test_a_walk_from_the_entry_does_not_need_every_computation():
    """gpt48's ENTRY calls thousands of fusions; two edges from its ROOT reach only some of them."""
    path = corpus_dir("big") / "gpt16-tpu-v5e.after_optimizations.hlo.txt.xz"
    module = load_file(str(path)).modules[0]
    centre = (module.entry.name, module.entry.root.name)
    part = neighbourhood_graph(module, centre, 2)
    assert _reach(build_graph(module), centre, 2) <= set(part.nodes)
    assert len({c for c, _ in part.nodes}) < len(module.computations) / 2
