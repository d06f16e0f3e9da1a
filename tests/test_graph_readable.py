"""`hloscan graph` diagrams stay readable and truthful (issue 11, item 13): --around is neutral, big
neighbourhoods are cut visibly, host-path nodes are not called [device], labels stay off cluster borders,
the title wraps and names the dump file."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus import CORPUS, require_path
from hloscan.cli import main
from hloscan.cli.graph import MAX_FANOUT, MAX_NODES, TITLE_WIDTH

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "offload_output.hlo.txt"


def _wide_module(users: int = 40, chain: int = 120) -> str:
    """A parameter read by `users` ops, then a `chain`-long line of ops: far more than one diagram holds."""
    lines = ["HloModule wide", "", "ENTRY main {", "  p = f32[8]{0} parameter(0)"]
    lines += [f"  u{i} = f32[8]{{0}} negate(p)" for i in range(users)]
    prev = "u0"
    for i in range(chain):
        lines.append(f"  c{i} = f32[8]{{0}} add({prev}, u{i % users})")
        prev = f"c{i}"
    lines += [f"  ROOT r = f32[8]{{0}} add({prev}, p)", "}", ""]
    return "\n".join(lines)


def _graph(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["graph", *args])
    return result.exit_code, result.stdout, result.stderr


def _node_attrs(dot: str) -> dict[str, str]:
    """instruction name -> its DOT attribute text (nodes carry id="computation/name")."""
    return {m.group(2): m.group(0) for m in re.finditer(r'\[label="[^\n]*?id="([^"/]+)/([^"]+)"[^\n]*', dot)}


def test_around_is_neutral(tmp_path):
    out = tmp_path / "a.dot"
    code, _, _ = _graph(str(DEMO), "--around", "custom-call.6", "--depth", "1", "-o", str(out))
    assert code == 0
    dot = out.read_text()
    assert "offending output" not in dot and "#c0392b" not in dot and "peripheries" not in dot
    centre = _node_attrs(dot)["custom-call.6"]
    assert 'penwidth="3"' in centre and 'color="#222222"' in centre


def test_deep_neighbourhood_is_cut_visibly(tmp_path):
    src = tmp_path / "wide.hlo.txt"
    src.write_text(_wide_module())
    out = tmp_path / "w.dot"
    code, stdout, stderr = _graph(str(src), "--around", "c60", "--depth", "10", "-o", str(out))
    assert code == 0
    dot = out.read_text()
    drawn = _node_attrs(dot)
    assert len(drawn) <= MAX_NODES
    assert "cut:" in stderr and "left out" in stderr
    more = re.findall(r'label="\+(\d+) more (users|operands|user|operand)\\nof ([^"]+)"', dot)
    assert more, "summary nodes for what was left out"
    # p has 41 users (u0..u39, r): the ones not drawn are counted by one summary node.
    users_of_p = [int(n) for n, kind, name in more if name == "p" and kind.startswith("user")]
    drawn_users = [n for n in drawn if re.fullmatch(r"u\d+|r", n)]
    assert users_of_p == [41 - len(drawn_users)] and users_of_p[0] > 41 - 2 * MAX_FANOUT
    assert re.search(r"label=\"[^\"]*cut: \d+ instruction", dot)  # said in the title too


def test_host_path_nodes_are_not_device(tmp_path):
    case = require_path(CORPUS / "tpu-oracle" / "host" / "v4__edit_scan_host_ys_out_device")
    out = tmp_path / "h.dot"
    code, _, _ = _graph(str(case), "--finding", "1", "-o", str(out))
    assert code == 0
    nodes = _node_attrs(out.read_text())
    for name in ("tuple.1", "get-tuple-element.9", "Arg_1.1", "reshape.1"):
        assert "[device]" not in nodes[name] and "[host path" in nodes[name], nodes[name]
    assert "[host path {1}]" in nodes["tuple.1"]  # only element {1} carries the moved value
    assert "[device]" in nodes["custom-call.2"]  # before the move: device memory


def test_title_wraps_and_names_the_file(tmp_path):
    case = require_path(CORPUS / "tpu-oracle" / "host" / "v4__edit_scan_host_ys_out_device")
    out = tmp_path / "t.dot"
    assert _graph(str(case), "--finding", "1", "-o", str(out))[0] == 0
    title = re.search(r'^  label="(.*)";$', out.read_text(), re.M).group(1).replace('\\"', '"')
    lines = title.split("\\n")
    assert len(lines) >= 3 and all(len(line) <= TITLE_WIDTH for line in lines)
    assert title.startswith("finding [1]:") and "before_optimizations.txt" in " ".join(lines[:2])


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
@pytest.mark.parametrize("args", [["--finding", "1"], ["--around", "while.1", "--depth", "10"]])
def test_no_node_or_label_straddles_a_cluster_border(tmp_path, args):
    case = require_path(CORPUS / "tpu-oracle" / "host" / "v4__edit_scan_host_ys_out_device")
    out = tmp_path / "c.dot"
    assert _graph(str(case), *args, "-o", str(out))[0] == 0
    assert "label=" not in "".join(l for l in out.read_text().splitlines() if "->" in l)  # no edge labels
    layout = json.loads(subprocess.run(["dot", "-Tjson"], input=out.read_bytes(), capture_output=True,
                                       check=True).stdout)
    clusters = [o for o in layout["objects"] if o.get("name", "").startswith("cluster_") and "bb" in o]
    boxes = [o for o in layout["objects"] if "pos" in o and "width" in o]
    assert clusters and boxes
    for cluster in clusters:
        x0, y0, x1, y1 = map(float, cluster["bb"].split(","))
        for node in boxes:
            x, y = map(float, node["pos"].split(","))
            w, h = float(node["width"]) * 36, float(node["height"]) * 36  # half sizes in points
            inside = x0 <= x - w and x + w <= x1 and y0 <= y - h and y + h <= y1
            outside = x + w <= x0 or x - w >= x1 or y + h <= y0 or y - h >= y1
            assert inside or outside, (cluster["name"], cluster.get("label"), node["name"], node.get("label"))


def test_resnet_depth_10_stays_small(tmp_path):
    big = require_path(CORPUS / "xla-hlo-files" / "xla__backends__cpu__benchmarks__hlo__resnet50_keras_jax_f32.hlo")
    out = tmp_path / "r.dot"
    code, _, stderr = _graph(str(big), "--around", "conv_general_dilated.57", "--depth", "10", "-o", str(out))
    assert code == 0 and "cut:" in stderr
    assert len(_node_attrs(out.read_text())) <= MAX_NODES


def test_title_breaks_long_paths_between_folders_not_inside_names():
    from hloscan.cli.graph import _wrap

    path = "/" + "/".join(f"folder{i:02d}_" + "x" * 12 for i in range(12)) + "/before_optimizations.txt"
    text = f"finding [1]: {path} (module m)"
    lines = _wrap(text, TITLE_WIDTH)
    assert len(lines) >= 3 and all(len(line) <= TITLE_WIDTH for line in lines)
    # Every break inside the path falls after a `/` (rejoined without a blank there, the text is whole).
    assert all(line.endswith("/") for line in lines[:-1])
    assert "".join(lines) == text
