"""`hloscan graph`: a focused Graphviz diagram of one finding's path or one instruction's neighbourhood."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import click

from hloscan.cli.main import main
from hloscan.analyses.host_offload.walk import analyze, is_move_to_host
from hloscan.cli.check import load_all
from hloscan.cli.main import config_options, family_flags, require_writable, settings
from hloscan.lint.scan import scan
from hloscan.hlo.ir import HOST_MEMORY_SPACE, Instruction, Module, Shape
from hloscan.hlo.layout import physical_bytes

EXIT_ERROR = 2
MAX_NODES = 150  # a focused view: never the whole module
_FILL = {"device": "#dbe9f6", "host": "#f9d9a8", "other": "#e3d7f0", "none": "#eeeeee"}

Node = tuple[str, str]  # (computation, instruction)


@dataclass
class View:
    """What to draw: nodes, edges with the value's shape index, and the nodes to highlight."""

    module: Module
    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[Node, Node, tuple[int, ...]]] = field(default_factory=list)
    host: set[Node] = field(default_factory=set)
    start: Node | None = None
    end: Node | None = None
    title: str = ""
    end_label: str = "offending output"
    # Extra lines under an edge's value label, e.g. a Pallas kernel's VMEM block for that operand.
    edge_notes: dict[tuple[Node, Node], str] = field(default_factory=dict)
    node_notes: dict[Node, str] = field(default_factory=dict)

    def add(self, node: Node) -> None:
        if node not in self.nodes:
            self.nodes.append(node)


# ------------------------------------------------------------------------------------------------ DOT text


def dot_quote(text: object) -> str:
    """A DOT double-quoted string: every character from a dump is literal (no escString, no HTML)."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return '"' + s + '"'


def _inst(module: Module, node: Node) -> Instruction:
    return module.computations_by_name[node[0]].by_name[node[1]]


def _space(module: Module, node: Node, host: set[Node]) -> str:
    inst = _inst(module, node)
    spaces = {leaf.memory_space for _, leaf in inst.shape.leaves()} if inst.shape is not None else set()
    if node in host or HOST_MEMORY_SPACE in spaces or is_move_to_host(inst):
        return "host"
    if spaces - {0}:
        return "other"
    return "device" if inst.shape is not None else "none"


def _value_label(shape: Shape | None, index: tuple[int, ...]) -> str:
    sub = shape.at(index) if shape is not None else None
    if sub is None:
        return ""
    try:
        size = f"{physical_bytes(sub):,} B"
    except Exception:  # noqa: BLE001 - unsized shapes (dynamic dims) still get a label
        size = "? B"
    prefix = "{" + ",".join(map(str, index)) + "} " if index else ""
    return f"{prefix}{sub.to_text()}\n{size}"


def to_dot(view: View) -> str:
    module = view.module
    ids = {node: f"n{i}" for i, node in enumerate(view.nodes)}
    lines = ["digraph hloscan {", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=9];', f"  label={dot_quote(view.title)};", "  labelloc=t;"]
    by_comp: dict[str, list[Node]] = {}
    for node in view.nodes:
        by_comp.setdefault(node[0], []).append(node)
    for number, (comp, nodes) in enumerate(by_comp.items()):
        lines.append(f"  subgraph cluster_{number} {{")
        lines.append(f"    label={dot_quote(comp)}; style=dashed;")
        lines.extend("    " + _node_line(module, view, node, ids[node]) for node in nodes)
        lines.append("  }")
    for src, dst, index in view.edges:
        if src in ids and dst in ids:
            label = _value_label(_inst(module, src).shape, index)
            if (src, dst) in view.edge_notes:
                label += "\n" + view.edge_notes[(src, dst)]
            lines.append(f"  {ids[src]} -> {ids[dst]} [label={dot_quote(label)}];")
    lines.append(_legend())
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_line(module: Module, view: View, node: Node, node_id: str) -> str:
    inst = _inst(module, node)
    space = _space(module, node, view.host)
    label = f"{inst.name}\n{inst.opcode}"
    if inst.opcode == "custom-call" and inst.custom_call_target:
        label += f" {inst.custom_call_target}"
    label += f"\n[{space}]"
    if node in view.node_notes:
        label += "\n" + view.node_notes[node]
    attrs = {"label": label, "fillcolor": _FILL[space], "id": f"{node[0]}/{node[1]}", "tooltip": f"line {inst.line}"}
    marks = [text for text, hit in (("offload start", node == view.start), (view.end_label, node == view.end)) if hit]
    if marks:
        attrs.update(color="#c0392b", penwidth="3", xlabel=" / ".join(marks))
    if node == view.end:
        attrs["peripheries"] = "2"
    return f"{node_id} [" + ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items()) + "];"


def _legend() -> str:
    rows = " ".join(f'legend_{k} [label={dot_quote(k)}, fillcolor="{v}"];' for k, v in _FILL.items() if k != "none")
    return f'  subgraph cluster_legend {{ label="memory space"; style=dotted; {rows} }}'


# ---------------------------------------------------------------------------------------------- views


def finding_view(module: Module, finding, host: set[Node]) -> View:
    view = View(module, host=set(host), title=f"{finding.code} {finding.name}: {finding.message}")
    if finding.trace:
        steps = [((s.computation, s.instruction), s.shape_index) for s in finding.trace]
        for node, _ in steps:
            view.add(node)
        for (a, ia), (b, _) in zip(steps, steps[1:]):
            view.edges.append((a, b, ia))
        _add_producers(module, view, steps[0][0])
        start_comp, start = finding.start or (None, None)
        view.start = (start_comp, start) if start_comp else next((n for n, _ in steps if n[1] == start), None)
        view.end = steps[-1][0]
        return view
    comp = finding.computation or module.entry.name
    if finding.instruction:
        around = neighbourhood_view(module, (comp, finding.instruction), 1, host)
        around.title = view.title
        around.end = (comp, finding.instruction)
        around.end_label = f"{finding.code} here"
        if finding.data and isinstance(finding.data.get("blocks"), list):  # analyses.vmem.kernels.estimate_json
            _annotate_kernel_blocks(module, around, around.end, finding.data)
        return around
    return view


def _block_text(block: dict) -> str:
    shape = "x".join(map(str, block.get("block_shape") or [])) or "?"
    text = f"block {block.get('dtype', '?')}[{shape}] x{block.get('buffers', '?')} = {block.get('total_bytes', 0):,} B VMEM"
    return text if block.get("counted", True) else text + " (not counted)"


def _annotate_kernel_blocks(module: Module, view: View, kernel: Node, data: dict) -> None:
    """Label each operand edge of a Pallas kernel with its VMEM block, and the kernel with the total."""
    operands = _inst(module, kernel).operand_names
    outputs = []
    for block in data["blocks"]:
        if not isinstance(block, dict):
            continue
        index = block.get("index")
        if block.get("role") == "input" and isinstance(index, int) and index < len(operands):
            view.edge_notes[((kernel[0], operands[index]), kernel)] = _block_text(block)
        else:
            outputs.append(f"{block.get('role', 'block')} {index}: {_block_text(block)}")
    total = data.get("estimate_bytes")
    limit = data.get("limit_bytes")
    summary = [f"grid {data.get('grid')}"] + outputs
    if isinstance(total, int) and isinstance(limit, int):
        summary.append(f"scoped VMEM {total:,} B vs limit {limit:,} B ({data.get('kind', 'estimate')})")
    view.node_notes[kernel] = "\n".join(summary)


def _add_producers(module: Module, view: View, node: Node) -> None:
    """The values the offload moved (context for the first step of a path)."""
    comp = module.computations_by_name[node[0]]
    for name in _inst(module, node).operand_names:
        if name in comp.by_name:
            view.add((node[0], name))
            view.edges.append(((node[0], name), node, ()))


def neighbourhood_view(module: Module, centre: Node, depth: int, host: set[Node]) -> View:
    graph = module.graph
    view = View(module, host=set(host), title=f"around {centre[1]} (depth {depth})")
    seen = {centre: 0}
    queue = deque([centre])
    while queue and len(seen) < MAX_NODES:
        node = queue.popleft()
        if seen[node] >= depth:
            continue
        for nxt in list(graph.successors(node)) + list(graph.predecessors(node)):
            if nxt not in seen and len(seen) < MAX_NODES:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    for node in seen:
        view.add(node)
    for a, b, data in graph.subgraph(seen).edges(data=True):
        if data.get("kind") != "control":
            view.edges.append((a, b, ()))
    view.end = centre
    return view


def find_instruction(module: Module, name: str) -> Node | None:
    comp_name, _, inst_name = name.rpartition("/") if "/" in name else ("", "", name)
    inst_name = inst_name.lstrip("%")
    for comp in module.computations:
        if (not comp_name or comp.name == comp_name) and inst_name in comp.by_name:
            return (comp.name, inst_name)
    return None


# ---------------------------------------------------------------------------------------------- output


def write_output(dot_text: str, out: Path) -> None:
    suffix = out.suffix.lower()
    if suffix == ".dot" or suffix == ".gv":
        out.write_text(dot_text, encoding="utf-8")
        return
    if suffix not in (".svg", ".png"):
        _fail(f"unsupported output {out.name!r}: use .dot, .svg or .png")
    binary = shutil.which("dot")
    if binary is None:
        _fail(f"the Graphviz `dot` program is needed to write {suffix} (apt-get install graphviz, brew install "
              "graphviz), or write .dot instead")
    proc = subprocess.run([binary, f"-T{suffix[1:]}", "-o", str(out)], input=dot_text.encode("utf-8"),
                          capture_output=True, timeout=120, check=False)
    if proc.returncode != 0:
        _fail(f"dot failed: {proc.stderr.decode('utf-8', 'replace').strip()}")


def _fail(message: str) -> None:
    click.echo(f"hloscan graph: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.command("graph")
@click.argument("path", type=click.Path(exists=True))
@click.option("--finding", "finding_number", type=click.IntRange(1), default=None,
              help="Draw the N-th finding (1-based) of `hloscan check` on PATH.")
@click.option("--around", default=None, help="Draw the neighbourhood of this instruction (NAME or COMPUTATION/NAME).")
@click.option("--depth", type=click.IntRange(0, 10), default=2, show_default=True, help="Hops for --around.")
@click.option("--output", "-o", "output", required=True, type=click.Path(dir_okay=False),
              help="OUT.dot, OUT.svg or OUT.png (svg/png need Graphviz `dot`).")
@config_options
@family_flags
def graph_command(path, finding_number, around, depth, output, config_file, no_config, **family_options) -> None:
    """Draw a focused Graphviz diagram: a finding's path, or an instruction's neighbourhood.

    Nodes are coloured by memory space (device, host S(5), other), clustered per computation; edges carry
    the value's shape and bytes. The offload start and the offending output are outlined.
    """
    if (finding_number is None) == (around is None):
        _fail("give exactly one of --finding N or --around INSTRUCTION")
    require_writable(output, "--output", (path,))
    config = settings(config_file, no_config, family_options)
    host_outputs = config.global_options.get("host_outputs")
    loaded = [f for f in load_all((path,), False)]
    bad = [f for f in loaded if not f.ok]
    if bad:
        _fail(bad[0].error.format())
    modules = [m for f in loaded for m in f.modules]
    if not modules:
        _fail(f"no HLO module in {path}")
    if finding_number is not None:
        findings = scan((path,), config, keep_modules=True).findings  # numbered as `hloscan check` numbers them
        if finding_number > len(findings):
            _fail(f"{path} has {len(findings)} finding(s); --finding {finding_number} does not exist")
        finding = findings[finding_number - 1]
        module = next((m for m in modules if m.name == finding.module), modules[0])
        view = finding_view(module, finding, _host_nodes(analyze(module, host_outputs)))
    else:
        module, centre = next(((m, n) for m in modules if (n := find_instruction(m, around)) is not None),
                              (None, None))
        if module is None:
            _fail(f"no instruction named {around!r} in {path}")
        view = neighbourhood_view(module, centre, depth, _host_nodes(analyze(module)))
    write_output(to_dot(view), Path(output))
    click.echo(f"wrote {output} ({len(view.nodes)} node(s))")


def _host_nodes(analysis) -> set[Node]:
    return {(k[0], k[1]) for k in analysis.host_values}


main.add_command(graph_command)
