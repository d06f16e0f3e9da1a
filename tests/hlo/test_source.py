"""Metadata -> the user's Python source: stack_frame_id through the StackFrames tables, or source_file/line."""

from __future__ import annotations

from corpus import corpus_dir
from hloscan.hlo.loader import load
from hloscan.hlo.parser import parse_text
from hloscan.hlo.source import source_location, stack

TABLES = """HloModule m

FileNames
1 "train.py"
2 "model.py"

FunctionNames
1 "main"
2 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=4 end_column=20}
2 {file_name_id=2 function_name_id=2 line=42 end_line=42 column=8 end_column=30}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %a = f32[4]{0} negate(%p), metadata={op_name="jit(f)/neg" stack_frame_id=2}
  ROOT %b = f32[4]{0} abs(%a), metadata={op_name="jit(f)/abs" source_file="legacy.py" source_line=7}
}
"""


def test_stack_frame_resolves_to_innermost_frame_and_whole_stack():
    (module,) = parse_text(TABLES)
    inst = module.entry.by_name["a"]
    loc = source_location(module, inst)
    assert (loc.file, loc.line, loc.function) == ("model.py", 42, "layer")
    assert [str(s) for s in stack(module, inst)] == ["model.py:42", "train.py:10"]


def test_source_file_and_line_fallback_and_none():
    (module,) = parse_text(TABLES)
    assert str(source_location(module, module.entry.by_name["b"])) == "legacy.py:7"
    assert source_location(module, module.entry.by_name["p"]) is None


def test_self_referencing_frames_terminate():
    (module,) = parse_text(TABLES.replace("parent_frame_id=0", "parent_frame_id=2"))
    assert len(stack(module, module.entry.by_name["a"])) == 2


def test_real_dump_has_python_lines():
    path = corpus_dir("tpu-oracle") / "host" / "v5e__ret_space_host" / "before_optimizations.txt"
    (module,) = load(path)
    loc = source_location(module, module.entry.root)
    assert loc is not None and loc.file.endswith("gen.py") and loc.line > 0
