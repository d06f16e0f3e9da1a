"""`hloscan graph`: a focused Graphviz diagram of one finding's path or one instruction's neighbourhood."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import click

from hloscan.analyses.host_offload.walk import analyze, is_move_to_device, is_move_to_host
from hloscan.cli.main import config_options, family_flags, load_all, main, require_writable, settings
from hloscan.cli.modules import MODULE_OPTION, STAGE_OPTION, module_matches, other_stage, refuse_unmatched, stage_inputs
from hloscan.hlo.graph import neighbourhood_graph
from hloscan.hlo.ir import HOST_MEMORY_SPACE, Instruction, Module, Shape
from hloscan.hlo.layout import physical_bytes
from hloscan.lint.files import write_output as write_file
from hloscan.lint.scan import scan

EXIT_ERROR = 2
# A focused view, never the whole module: past this many instructions a diagram stops being readable, so a
# neighbourhood is cut and the cut is drawn (summary nodes) and said (title, stderr).
MAX_NODES = 60
# Operands/users drawn per instruction; the rest of a wide fan (a parameter read by 200 ops) is one summary node.
MAX_FANOUT = 8
TITLE_WIDTH = 100
_FILL = {"device": "#dbe9f6", "host": "#f9d9a8", "host path": "#fdf0dc", "other": "#e3d7f0", "none": "#eeeeee"}
_LEGEND = {"device": "device memory", "host": "host memory S(5)",
           "host path": "on an offload walk (bound for host memory)", "other": "other memory space"}

Node = tuple[str, str]  # (computation, instruction)


@dataclass
class View:
    """What to draw: nodes, edges with the value's shape index, and the nodes to highlight."""

    module: Module
    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[Node, Node, tuple[int, ...]]] = field(default_factory=list)
    host: set[Node] = field(default_factory=set)
    # Nodes an offload walk passes through (they carry the value bound for host memory), with the
    # tuple index that carries it; coloured as the host path even before the value lands in S(5).
    host_path: dict[Node, tuple[int, ...]] = field(default_factory=dict)
    start: Node | None = None
    end: Node | None = None
    centre: Node | None = None  # the --around instruction: outlined, no verdict
    title: str = ""
    source: str = ""  # the dump file and module drawn
    end_label: str = "offending output"
    # Neighbours left out (node limit, fan-out limit, depth): (drawn node, "users"/"operands", count).
    cut: list[tuple[Node, str, int]] = field(default_factory=list)
    cut_reason: str = ""
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


def _space(module: Module, node: Node, host: set[Node], host_path: dict[Node, tuple[int, ...]] | None = None) -> str:
    inst = _inst(module, node)
    spaces = {leaf.memory_space for _, leaf in inst.shape.leaves()} if inst.shape is not None else set()
    if is_move_to_device(inst) and HOST_MEMORY_SPACE not in spaces:
        return "device"  # the move back: its result is in device memory, whatever its operand was
    if node in host or HOST_MEMORY_SPACE in spaces or is_move_to_host(inst):
        return "host"
    if host_path and node in host_path:
        return "host path"
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


def wrap_title(view: View) -> str:
    """The title in lines of at most TITLE_WIDTH characters: the file and module first, then the subject."""
    lines = []
    for part in (view.source, view.title, view.cut_reason):
        for line in part.split("\n") if part else ():
            lines.extend(_wrap(line, TITLE_WIDTH) or [""])
    return "\n".join(lines)


# A piece ends at a blank or just after a `/`: long paths break between folders, not inside a name.
_PIECE = re.compile(r"[^\s/]*/|[^\s/]+|\s+")


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for piece in _PIECE.findall(text):
        if len(current) + len(piece) > width and current.strip():
            lines.append(current.rstrip())
            current = ""
        if not current and piece.isspace():
            continue
        current += piece
        while len(current) > width:  # a single name longer than a line: cut it
            lines.append(current[:width])
            current = current[width:]
    if current.strip():
        lines.append(current.rstrip())
    return lines


def to_dot(view: View) -> str:
    module = view.module
    ids = {node: f"n{i}" for i, node in enumerate(view.nodes)}
    lines = ["digraph hloscan {", "  rankdir=TB;", "  newrank=true;", "  nodesep=0.3;", "  ranksep=0.3;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=9];', f"  label={dot_quote(wrap_title(view))};", "  labelloc=t;",
             '  labeljust=l;', "  fontname=\"Helvetica\";"]
    by_comp: dict[str, list[Node]] = {}
    for node in view.nodes:
        by_comp.setdefault(node[0], []).append(node)
    summaries = _summary_lines(view, ids)
    # An edge's value label is a node of its own (dot keeps nodes, but not edge labels, inside cluster
    # borders): in the computation's cluster for an edge within it, between the clusters otherwise.
    value_nodes: dict[str, list[str]] = {}
    edge_lines = []
    for number, (src, dst, index) in enumerate(view.edges):
        if src not in ids or dst not in ids:
            continue
        label = _value_label(_inst(module, src).shape, index)
        if (src, dst) in view.edge_notes:
            label += "\n" + view.edge_notes[(src, dst)]
        if not label:
            edge_lines.append(f"  {ids[src]} -> {ids[dst]};")
            continue
        value = f"v{number}"
        home = src[0] if src[0] == dst[0] else ""
        value_nodes.setdefault(home, []).append(f"{value} [shape=plain, style=\"\", fontsize=9, "
                                                f"label={dot_quote(label)}];")
        edge_lines.append(f"  {ids[src]} -> {value} [arrowhead=none];")
        edge_lines.append(f"  {value} -> {ids[dst]};")
    for number, (comp, nodes) in enumerate(by_comp.items()):
        lines.append(f"  subgraph cluster_{number} {{")
        lines.append(f"    label={dot_quote(comp)}; style=dashed; fontname=\"Helvetica\";")
        lines.extend("    " + _node_line(module, view, node, ids[node]) for node in nodes)
        lines.extend("    " + line for node in nodes for line in summaries.get(node, ()))
        lines.extend("    " + line for line in value_nodes.get(comp, ()))
        lines.append("  }")
    lines.extend("  " + line for line in value_nodes.get("", ()))
    lines.extend(edge_lines)
    lines.extend("  " + line for line in _summary_edges(view, ids))
    lines.append(_legend(view))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _summary_lines(view: View, ids: dict[Node, str]) -> dict[Node, list[str]]:
    """One dashed `+N more users/operands` node beside each drawn node whose neighbours were cut."""
    out: dict[Node, list[str]] = {}
    for number, (node, direction, count) in enumerate(view.cut):
        if node in ids:
            noun = direction if count > 1 else direction[:-1]
            label = f"+{count} more {noun}\nof {node[1]}"
            out.setdefault(node, []).append(f"more{number} [label={dot_quote(label)}, style=\"dashed,rounded\", "
                                            f"fillcolor=\"#ffffff\", fontsize=10];")
    return out


def _summary_edges(view: View, ids: dict[Node, str]) -> list[str]:
    lines = []
    for number, (node, direction, _) in enumerate(view.cut):
        if node in ids:
            a, b = (ids[node], f"more{number}") if direction == "users" else (f"more{number}", ids[node])
            lines.append(f"{a} -> {b} [style=dashed];")
    return lines


def _node_line(module: Module, view: View, node: Node, node_id: str) -> str:
    inst = _inst(module, node)
    space = _space(module, node, view.host, view.host_path)
    # Marks go inside the label (not xlabel): Graphviz places xlabels after layout, over cluster borders.
    # XLA's "starting from" names where its offload walk begins, often the ROOT tuple itself: say that, rather
    # than call the ROOT an offload start.
    marks = [text for text, hit in (("XLA's walk starts here", node == view.start), (view.end_label, node == view.end))
             if hit]
    label = (" / ".join(marks) + "\n") if marks else ""
    label += f"{inst.name}\n{inst.opcode}"
    if inst.opcode == "custom-call" and inst.custom_call_target:
        label += f" {inst.custom_call_target}"
    index = view.host_path.get(node, ())
    label += f"\n[{space}" + (" {" + ",".join(map(str, index)) + "}" if space == "host path" and index else "") + "]"
    if node in view.node_notes:
        label += "\n" + view.node_notes[node]
    attrs = {"label": label, "fillcolor": _FILL[space], "id": f"{node[0]}/{node[1]}", "tooltip": f"line {inst.line}"}
    if marks:
        attrs.update(color="#c0392b", penwidth="3")
    elif node == view.centre:
        attrs.update(color="#222222", penwidth="3")  # neutral: the instruction asked about, no verdict
    if node == view.end:
        attrs["peripheries"] = "2"
    return f"{node_id} [" + ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items()) + "];"


def _legend(view: View) -> str:
    used = {_space(view.module, n, view.host, view.host_path) for n in view.nodes} | {"device", "host"}
    rows = " ".join(f"legend_{i} [label={dot_quote(text)}, fillcolor=\"{_FILL[k]}\"];"
                    for i, (k, text) in enumerate(_LEGEND.items()) if k in used)
    return f'  subgraph cluster_legend {{ label="memory space"; style=dotted; {rows} }}'


# ---------------------------------------------------------------------------------------------- views


def finding_view(module: Module, finding, host: set[Node]) -> View:
    view = View(module, host=set(host), title=f"{finding.code} {finding.name}: {finding.message}")
    if finding.trace:
        steps = [((s.computation, s.instruction), s.shape_index) for s in finding.trace]
        for node, index in steps:
            view.add(node)
            view.host_path.setdefault(node, index)  # every step of an offload path carries the moved value
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


def neighbourhood_view(module: Module, centre: Node, depth: int, host: set[Node],
                       host_path: dict[Node, tuple[int, ...]] | None = None) -> View:
    """The instructions within `depth` hops of `centre`, breadth first, at most MAX_NODES of them and
    MAX_FANOUT operands/users per instruction; what is left out becomes `+N more` summary nodes."""
    # The whole graph when an analysis built it already, else only the part this walk can reach.
    graph = module.graph_if_built or neighbourhood_graph(module, centre, depth)
    view = View(module, host=set(host), host_path=dict(host_path or {}), title=f"around {centre[1]} (depth {depth})")
    seen = {centre: 0}
    queue = deque([centre])
    full = False
    clipped: list[tuple[Node, str, list[Node]]] = []  # expanded nodes some of whose neighbours were not taken
    while queue:
        node = queue.popleft()
        if seen[node] >= depth:
            continue
        for direction, neighbours in (("operands", _data_neighbours(graph.predecessors(node), graph, node, True)),
                                      ("users", _data_neighbours(graph.successors(node), graph, node, False))):
            fresh = [n for n in neighbours if n not in seen]
            room = 0 if full else min(MAX_FANOUT, MAX_NODES - len(seen))
            for nxt in fresh[:room]:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
            if len(fresh) > room:
                clipped.append((node, direction, neighbours))
                full = full or len(seen) >= MAX_NODES
    # Count what is missing once the walk is over: a neighbour skipped here may be reached by another path.
    for node, direction, neighbours in clipped:
        missing = sum(1 for n in neighbours if n not in seen)
        if missing:
            view.cut.append((node, direction, missing))
    for node in seen:
        view.add(node)
    # In the graph's node order: networkx's subgraph views follow their node set's hash order once it is
    # under half the graph, which made the diagram of a big module differ from run to run.
    for a in (n for n in graph.succ if n in seen):
        for b, data in graph.succ[a].items():
            if b in seen and data.get("kind") != "control":
                view.edges.append((a, b, ()))
    view.centre = centre
    if view.cut:
        hidden = sum(count for _, _, count in view.cut)
        why = f"the {MAX_NODES}-instruction limit" if full else f"at most {MAX_FANOUT} operands/users per instruction"
        view.cut_reason = (f"cut: {len(seen)} instruction(s) drawn, {hidden} neighbour(s) left out ({why}); "
                           "the dashed '+N more' nodes stand for them")
    return view


def _data_neighbours(nodes, graph, node: Node, incoming: bool) -> list[Node]:
    """Neighbours along data edges (control edges are not drawn), in a stable order."""
    out = []
    for other in nodes:
        data = graph.get_edge_data(other, node) if incoming else graph.get_edge_data(node, other)
        if not data or data.get("kind") != "control":
            out.append(other)
    return out


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
        write_file(out, dot_text)  # a device or FIFO is written through; a write error is OutputError (exit 2)
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
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--finding", "finding_number", type=click.IntRange(1), default=None,
              help="Draw finding [N] of `hloscan check` on the same PATHS (with the same --select/--ignore).")
@click.option("--around", default=None, help="Draw the neighbourhood of this instruction (NAME or COMPUTATION/NAME).")
@click.option("--depth", type=click.IntRange(0, 10), default=2, show_default=True,
              help=f"Hops for --around (at most {MAX_NODES} instructions are drawn; the rest is summarised).")
@click.option("--select", default=None, help="As for `hloscan check`: the findings --finding counts.")
@click.option("--ignore", default=None, help="As for `hloscan check`: the findings --finding counts.")
@click.option("--output", "-o", "output", required=True, type=click.Path(dir_okay=False),
              help="OUT.dot, OUT.svg or OUT.png (svg/png need Graphviz `dot`).")
@MODULE_OPTION
@STAGE_OPTION
@config_options
@family_flags
def graph_command(paths, finding_number, around, depth, select, ignore, output, module_name, stage, config_file,
                  no_config, **family_options) -> None:
    """Draw a focused Graphviz diagram: a finding's path, or an instruction's neighbourhood.

    Nodes are coloured by memory space (device, host S(5), on an offload walk, other), clustered per
    computation; edges carry the value's shape and bytes. A finding's start (XLA's "starting from") and offending output
    are outlined in red; the --around instruction in black. The title names the file and module.
    """
    if (finding_number is None) == (around is None):
        _fail("give exactly one of --finding N or --around INSTRUCTION")
    require_writable(output, "--output", tuple(paths))
    config = settings(config_file, no_config, family_options, select, ignore)
    host_outputs = config.global_options.get("host_outputs")
    loaded = [f for f in load_all(tuple(paths), False) if not other_stage(f.path, stage)]
    bad = [f for f in loaded if not f.ok]
    if bad:
        _fail(bad[0].error.format())
    refuse_unmatched(" ".join(paths), [m.name for f in loaded for m in f.modules], module_name)
    modules = [(f.path, m) for f in loaded for m in f.modules if module_matches(m.name, module_name)]
    if not modules:
        _fail(f"no HLO module in {' '.join(paths)}")
    if finding_number is not None:
        # Numbered as `hloscan check` numbers them, with the same --module / --stage.
        findings = [f for f in scan(paths, config, keep_modules=True, inputs=stage_inputs(paths, stage)).findings
                    if module_matches(f.module, module_name)]
        if finding_number > len(findings):
            _fail(f"{' '.join(paths)} has {len(findings)} finding(s); --finding {finding_number} does not exist")
        finding = findings[finding_number - 1]
        path, module = next(((p, m) for p, m in modules if p == finding.span.path and m.name == finding.module),
                            modules[0])
        analysis = analyze(module, host_outputs)
        view = finding_view(module, finding, _host_nodes(analysis))
        view.host_path = {**_walked_nodes(analysis), **view.host_path}
        view.source = f"finding [{finding_number}]: {path} (module {module.name})"
    else:
        path, module, centre = next(((p, m, n) for p, m in modules if (n := find_instruction(m, around)) is not None),
                                    (None, None, None))
        if module is None:
            names = sorted({i.name for _, m in modules for _, i in m.instructions()})
            close = difflib.get_close_matches(around, names, n=3, cutoff=0.6) or \
                [n for n in names if n.startswith(around + ".")][:3]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            _fail(f"no instruction named {around!r} in {' '.join(paths)}{hint}")
        analysis = analyze(module, host_outputs)
        view = neighbourhood_view(module, centre, depth, _host_nodes(analysis), _walked_nodes(analysis))
        view.source = f"{path} (module {module.name})"
    write_output(to_dot(view), Path(output))
    if view.cut_reason:
        click.echo(f"hloscan graph: {view.cut_reason}", err=True)
    click.echo(f"wrote {output} ({len(view.nodes)} node(s))")


def _host_nodes(analysis) -> set[Node]:
    return {(k[0], k[1]) for k in analysis.host_values}


def _walked_nodes(analysis) -> dict[Node, tuple[int, ...]]:
    """Every instruction an offload walk reached, with the tuple index that carries the moved value."""
    out: dict[Node, tuple[int, ...]] = {}
    for comp, inst, index in analysis.parents:
        out.setdefault((comp, inst), tuple(index))
    return out


main.add_command(graph_command)
