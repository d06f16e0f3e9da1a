"""Commands that read only the entry signature (signature, memory, diff), and vmem of a dump without a kernel,
parse only a big dump's ENTRY computation: the same answer as a whole parse, at a fraction of its cost."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscan.cli import main
from hloscan.hlo.entry_only import entry_only_text
from hloscan.hlo import loader
from hloscan.hlo.loader import load_file, read_input
from hloscan.hlo.parser import STRICT_AUTO_MAX_CHARS
from hloscan.hlo.signature import module_signature

from corpus import CORPUS, FIXTURES, require_path

BIG = CORPUS / "big" / "gpt16-tpu-v5e.after_optimizations.hlo.txt.xz"


def _big_dumps() -> list[Path]:
    """Dumps the fast path reads (over STRICT_AUTO_MAX_CHARS), before and after optimization, sharded too."""
    found = [p for p in sorted((FIXTURES / "oracle_new" / "sharded7").glob("*/*_optimizations.txt"))
             if p.stat().st_size > STRICT_AUTO_MAX_CHARS]
    return found[::6]


def test_the_cut_text_keeps_every_line_and_only_the_entry_computation():
    text = lzma.open(require_path(BIG), "rt").read()
    cut = entry_only_text(text)
    assert cut is not None and cut.count("\n") == text.count("\n") and len(cut) < len(text) / 2
    assert cut.count("\n%") == 0 and cut.count("\nENTRY ") == 1
    assert cut.startswith(text[:text.find("\n%")])  # header and stack-frame tables kept as they are


def test_small_and_multi_module_texts_are_not_cut():
    assert entry_only_text("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n") is None
    big = "HloModule m\n" + "// padding\n" * (STRICT_AUTO_MAX_CHARS // 10)
    two = big + "ENTRY %a () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n// -----\n" + big + \
        "ENTRY %b () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n"
    assert entry_only_text(two) is None


@pytest.mark.parametrize("path", _big_dumps(), ids=lambda p: p.parent.name[:40] + "/" + p.name[:6])
def test_an_entry_only_parse_has_the_whole_parses_signature(path: Path):
    whole, cut = load_file(str(path)), load_file(str(path), entry_only=True)
    assert whole.ok and cut.ok
    (a,), (b,) = whole.modules, cut.modules
    assert len(b.computations) == 1 < len(a.computations)
    assert module_signature(a) == module_signature(b)


def test_diff_and_memory_answer_the_same_from_the_entry_alone(tmp_path, monkeypatch):
    plain = tmp_path / "gpt16.txt"
    plain.write_text(read_input(str(require_path(BIG)))[0])
    other = next(p for p in _big_dumps() if "before" in p.name)
    runner = CliRunner()
    commands = (["memory", "--format", "json", str(plain)], ["signature", "--format", "json", str(plain)],
                ["diff", "--format", "json", str(plain), str(other)])
    cut = [runner.invoke(main, args) for args in commands]
    monkeypatch.setattr(loader, "entry_only_text", lambda text: None)  # every computation parsed
    whole = [runner.invoke(main, args) for args in commands]
    for a, b in zip(cut, whole):
        assert a.exit_code == b.exit_code and a.exit_code in (0, 1), a.output
        assert json.loads(a.output) == json.loads(b.output)


def test_vmem_parses_only_the_entry_of_a_big_dump_without_a_kernel(monkeypatch):
    path = next(p for p in _big_dumps() if "tpu_custom_call" not in p.read_text())
    (module,) = load_file(str(path), entry_only_without="tpu_custom_call").modules
    assert len(module.computations) == 1
    (whole,) = load_file(str(path), entry_only_without="ENTRY").modules  # present: parsed whole
    assert len(whole.computations) > 1
    runner = CliRunner()
    cut = runner.invoke(main, ["vmem", "--format", "json", str(path)])
    monkeypatch.setattr(loader, "entry_only_text", lambda text: None)
    every = runner.invoke(main, ["vmem", "--format", "json", str(path)])
    assert cut.exit_code == every.exit_code == 0, cut.output
    assert json.loads(cut.output) == json.loads(every.output) == {"kernels": [], "errors": []}
