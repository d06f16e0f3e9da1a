"""`hloscan graph`: a finding's path rendered as SVG, and DOT escaping of hostile names from a dump."""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus import REPO as ROOT
from hloscan.cli import main
from hloscan.cli.graph import dot_quote

DEMO = ROOT / "fixtures" / "demo" / "offload_output.hlo.txt"
SVG = "{http://www.w3.org/2000/svg}"

HOSTILE = r'''HloModule hostile, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, f32[8]{0})}

ENTRY main {
  p = f32[8]{0} parameter(0), metadata={op_name="a\"b}\n<c> -> d"}
  h = f32[8]{0} custom-call(p), custom_call_target="MoveToHost"
  k = f32[8]{0} custom-call(h), custom_call_target="x\" ] ; digraph { evil\n<b>} -> y"
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(p, k)
}
'''


def _need_dot() -> None:
    if shutil.which("dot") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Graphviz `dot` is required in CI")
        pytest.skip("Graphviz `dot` not installed")


def _texts(svg: Path) -> list[str]:
    tree = ET.parse(svg)
    return ["".join(t.itertext()) for t in tree.iter(f"{SVG}text")]


def test_svg_of_a_finding_shows_its_path(tmp_path: Path) -> None:
    _need_dot()
    out = tmp_path / "f.svg"
    result = CliRunner().invoke(main, ["graph", str(DEMO), "--finding", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    texts = _texts(out)
    for name in ("custom-call.5", "custom-call.6", "tuple.3"):
        assert name in texts, name
    assert "XLA's walk starts here / offending output" in texts  # XLA starts the walk at the ROOT tuple here
    assert any("524,288 B" in t for t in texts)  # f32[256,512] on the path edges
    groups = {g.get("id") for g in ET.parse(out).iter(f"{SVG}g")}
    assert "main.12/tuple.3" in groups and "main.12/dot.3" not in groups  # focused, not the whole module


def test_around_and_bad_arguments(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "a.dot"
    ok = runner.invoke(main, ["graph", str(DEMO), "--around", "custom-call.6", "--depth", "1", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "custom-call.5" in out.read_text() and "dot.3" not in out.read_text()
    assert runner.invoke(main, ["graph", str(DEMO), "-o", str(out)]).exit_code == 2
    assert runner.invoke(main, ["graph", str(DEMO), "--finding", "9", "-o", str(out)]).exit_code == 2
    assert runner.invoke(main, ["graph", str(DEMO), "--around", "nope", "-o", str(out)]).exit_code == 2


def test_svg_without_dot_fails_cleanly(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    result = CliRunner().invoke(main, ["graph", str(DEMO), "--finding", "1", "-o", str(tmp_path / "f.svg")])
    assert result.exit_code == 2 and "dot" in result.output


def test_dot_quote_keeps_every_character_literal() -> None:
    assert dot_quote('a"b') == r'"a\"b"'
    assert dot_quote("x\ny") == r'"x\ny"'
    assert dot_quote(r"back\slash") == r'"back\\slash"'
    assert dot_quote("<b>{c}|d -> e") == '"<b>{c}|d -> e"'


def test_hostile_names_survive_dot(tmp_path: Path) -> None:
    # HLO names cannot hold DOT syntax, but quoted strings (custom-call targets, computation labels) can.
    hostile = tmp_path / "hostile.hlo.txt"
    hostile.write_text(HOSTILE)
    out = tmp_path / "h.dot"
    result = CliRunner().invoke(main, ["graph", str(hostile), "--around", "k", "--depth", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert r'custom-call x\" ] ; digraph { evil\n<b>} -> y' in text  # quote and newline escaped, rest literal
    if shutil.which("dot") is not None:
        proc = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        texts = ["".join(t.itertext()) for t in ET.fromstring(proc.stdout).iter(f"{SVG}text")]
        assert any('x" ] ; digraph { evil' in t for t in texts), texts
        assert any("<b>}" in t for t in texts), texts


def test_dot_escapes_title_with_hostile_message(tmp_path: Path) -> None:
    from hloscan.cli.graph import View, to_dot
    from hloscan.hlo.loader import load_text

    module = load_text(HOSTILE)[0]
    view = View(module, nodes=[("main", "p"), ("main", "h")], title='evil" ]; x -> y {\n} <b>')
    view.edges.append((("main", "p"), ("main", "h"), ()))
    text = to_dot(view)
    assert 'label="evil\\" ]; x -> y {\\n} <b>"' in text
    if shutil.which("dot") is not None:
        proc = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        titles = ["".join(t.itertext()) for t in ET.fromstring(proc.stdout).iter(f"{SVG}text")]
        assert 'evil" ]; x -> y {' in titles
