"""Entry signatures and their diffs, on the oracle's layout pairs and on small hand-written modules."""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict

import pytest

from _shape_reader import LAYOUT_DIR, load_module, parse_shape, require
from corpus import tsv_rows
from hloscan.analyses.layouts.memory_report import memory_report, render_memory
from hloscan.hlo.parser import parse_text
from hloscan.hlo.signature import (
    diff_signatures,
    module_signature,
    parse_aliases,
    parse_computation_layout,
    parse_donors,
    render_diff,
    render_signature,
)


def _pair_rows() -> dict[tuple[str, str], list[dict[str, str]]]:
    """(generation, group) -> MANIFEST rows of the pair cases that differ only in parameter layout."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in tsv_rows(require(LAYOUT_DIR / "MANIFEST.tsv")):
        if row["kind"] == "pair" and row["verdict"] == "ok":
            group = row["case"].split("__", 1)[1].rsplit("_", 1)[0]
            groups[(row["generation"], group)].append(row)
    return groups


def test_pairs_find_exactly_the_differing_parameter():
    groups = _pair_rows()
    assert len(groups) == 25
    sigs = {row["case"]: module_signature(load_module(LAYOUT_DIR / row["case"] / "after_optimizations.txt"))
            for rows in groups.values() for row in rows}
    checked = 0
    for rows in groups.values():
        for a, b in itertools.permutations(rows, 2):
            old, new = sigs[a["case"]], sigs[b["case"]]
            assert old.parameters[0].bytes == int(a["bytes"]) and old.parameters[0].shape_text == a["layout"]
            diff = diff_signatures(old, new)
            if a["layout"] == b["layout"]:
                assert diff.layout_changes == [] and diff.e0102_risks == []
                continue
            (change,) = diff.layout_changes
            assert (change.old.index, change.new.index, change.matched_by) == (0, 0, "index")
            assert (change.old.bytes, change.new.bytes) == (int(a["bytes"]), int(b["bytes"]))
            assert [d.new.index for d in diff.e0102_risks] == ([0] if a["bytes"] != b["bytes"] else [])
            assert diff.removed == () and diff.added == ()
            checked += 1
    assert checked > 700


def test_seed_pair_render_and_json():
    old = module_signature(load_module(LAYOUT_DIR / "v4__pair_bfloat16_16x1280x40_m2m012" / "after_optimizations.txt"))
    new = module_signature(load_module(LAYOUT_DIR / "v4__pair_bfloat16_16x1280x40_m2m021" / "after_optimizations.txt"))
    diff = diff_signatures(old, new)
    text = render_diff(diff)
    assert "5242880" in text and "1638400" in text and "E0102" in text
    data = json.loads(json.dumps(diff.to_json()))
    assert data["e0102_risks"][0]["old_bytes"] == 5242880 and data["e0102_risks"][0]["new_bytes"] == 1638400
    assert [c["field"] for c in data["e0102_risks"][0]["changes"]] == ["dimension order", "bytes"]
    assert diff_signatures(old, old).is_empty


def test_many_parameters_with_index_comments_match_layouts_tsv():
    """entry_computation_layout with /*index=N*/ comments: 23 parameters, bytes as the compiler reported."""
    module = load_module(LAYOUT_DIR / "v4__bfloat16" / "after_optimizations.txt")
    sig = module_signature(module)
    assert sig.layout_source == "entry_computation_layout" and len(sig.parameters) == 23
    expected = {r["layout"]: int(r["bytes"]) for r in tsv_rows(require(LAYOUT_DIR / "LAYOUTS.tsv"))
                if r["generation"] == "v4" and r["dtype"] == "bfloat16"}
    for p in sig.parameters:
        assert p.bytes == expected[p.shape_text], p.shape_text
    assert sig.parameters[12].name == "xs_12_.1" and sig.parameters[12].op_name == "xs[12]"
    assert len(sig.outputs) == 23 and sig.outputs[12].shape_index == (12,)
    assert "parameter 12 (xs_12_.1)" in render_signature(sig)


def test_buffer_assignment_parameter_sizes():
    """Every parameter allocation in the layout family's buffer assignments equals the signature bytes."""
    pattern = re.compile(r"allocation \d+: size (\d+), parameter (\d+), shape \|.*\| at ShapeIndex \{([\d,]*)\}")
    checked = 0
    for case in sorted(p for p in require(LAYOUT_DIR).iterdir() if (p / "buffer-assignment.txt").exists()):
        sig = module_signature(load_module(case / "after_optimizations.txt"))
        by_key = {(e.index, e.shape_index): e.bytes for e in sig.parameters}
        for m in pattern.finditer((case / "buffer-assignment.txt").read_text()):
            key = (int(m.group(2)), tuple(int(x) for x in m.group(3).split(",") if x))
            assert by_key[key] == int(m.group(1)), (case.name, key)
            checked += 1
    assert checked >= 1995


OLD = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (1, {}) }, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}, s32[]{:T(128)})->(f32[8,128]{1,0:T(8,128)}, f32[4]{0:T(128)S(5)})}

ENTRY %main (w: f32[8,128], e: bf16[16,1280,40], step: s32[]) -> (f32[8,128], f32[4]) {
  %w = f32[8,128]{1,0} parameter(0), metadata={op_name="params['w']"}
  %e = bf16[16,1280,40]{2,1,0} parameter(1), metadata={op_name="params['emb']"}
  %step = s32[] parameter(2), metadata={op_name="step"}
  %neg = f32[8,128]{1,0} negate(%w)
  %c = f32[4]{0} constant({1, 2, 3, 4})
  ROOT %t = (f32[8,128]{1,0}, f32[4]{0}) tuple(%neg, %c)
}
"""

# Parameters 1 and 2 swapped, the embedding laid out {2,1,0}, donation dropped, aliasing kept.
NEW = """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, s32[]{:T(128)}, bf16[16,1280,40]{2,1,0:T(8,128)(2,1)})->(f32[8,128]{1,0:T(8,128)}, f32[4]{0:T(128)})}

ENTRY %main (w: f32[8,128], step: s32[], e: bf16[16,1280,40]) -> (f32[8,128], f32[4]) {
  %w = f32[8,128]{1,0} parameter(0), metadata={op_name="params['w']"}
  %step = s32[] parameter(1), metadata={op_name="step"}
  %e = bf16[16,1280,40]{2,1,0} parameter(2), metadata={op_name="params['emb']"}
  %neg = f32[8,128]{1,0} negate(%w)
  %c = f32[4]{0} constant({1, 2, 3, 4})
  ROOT %t = (f32[8,128]{1,0}, f32[4]{0}) tuple(%neg, %c)
}
"""


def _sig(text: str):
    return module_signature(parse_text(text)[0])


def test_signature_fields():
    sig = _sig(OLD)
    w, e, step = sig.parameters
    assert (w.name, w.op_name, w.bytes, [a.output_index for a in w.aliases]) == ("w", "params['w']", 4096, [(0,)])
    assert (e.shape_text, e.bytes, e.donated, e.tiling) == (
        "bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}", 1638400, True, "T(8,128)(2,1)")
    assert step.bytes == 512 and not step.donated
    out0, out1 = sig.outputs
    assert (out0.name, out0.shape_index, out0.aliases[0].parameter) == ("neg", (0,), 0)
    assert (out1.name, out1.memory_space) == ("c", 5)
    data = json.loads(json.dumps(sig.to_json()))
    assert data["parameters"][1]["donated"] is True and data["outputs"][1]["memory_space_name"] == "host"


def test_reordered_parameters_matched_by_op_name():
    diff = diff_signatures(_sig(OLD), _sig(NEW))
    by_name = {d.new.op_name: d for d in diff.parameters}
    emb = by_name["params['emb']"]
    assert (emb.old.index, emb.new.index, emb.matched_by) == (1, 2, "name")
    assert (emb.old.bytes, emb.new.bytes) == (1638400, 5242880)
    fields = [c.field for c in emb.changes]
    assert fields == ["index", "dimension order", "bytes", "donation"]
    assert by_name["step"].matched_by == "name" and not by_name["step"].physical_layout_differs
    assert [d.new.op_name for d in diff.layout_changes] == ["params['emb']"]
    assert [d.new.op_name for d in diff.e0102_risks] == ["params['emb']"]
    (out,) = diff.changed_outputs
    assert [c.field for c in out.changes] == ["memory space"]
    assert "1638400 -> 5242880" in render_diff(diff)


def test_fallback_to_instruction_shapes():
    text = OLD.replace(OLD.splitlines()[0], "HloModule m")
    sig = _sig(text)
    assert sig.layout_source == "instructions"
    assert sig.parameters[1].shape_text == "bf16[16,1280,40]{2,1,0}" and sig.parameters[1].bytes == 1638400


def test_attribute_readers():
    params, result = parse_computation_layout(
        "{(f32[8]{0}, /*index=1*/(bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}, s32[]))->f32[8]{0}}", parse_shape)
    assert [p.to_text() for p in params] == ["f32[8]{0}", "(bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}, s32[])"]
    assert result.to_text() == "f32[8]{0}"
    assert parse_computation_layout("{()->()}", parse_shape)[0] == []
    aliases = parse_aliases("{ {0}: (0, {}, may-alias), {1, 2}: (3, {1}, must-alias), {}: (4, {}) }")
    assert [(a.output_index, a.parameter, a.parameter_index, a.kind) for a in aliases] == [
        ((0,), 0, (), "may-alias"), ((1, 2), 3, (1,), "must-alias"), ((), 4, (), "may-alias")]
    assert parse_donors("{ (0, {0}), (1, {}) }") == [(0, (0,)), (1, ())]
    with pytest.raises(ValueError):
        parse_computation_layout("{f32[8]{0}}", parse_shape)


def test_memory_report_waste():
    report = memory_report(_sig(NEW), top=2, waste_threshold=0.5)
    assert [r.entry.op_name for r in report.waste][:1] == ["params['emb']"]
    worst = report.waste[0]
    assert worst.waste_bytes == 5242880 - 1638400 and round(worst.waste_fraction, 2) == 0.69
    assert worst.to_json()["padding"][0]["dim"] == 2
    assert report.largest[0].entry.bytes == 5242880
    (device,) = report.spaces
    assert device.parameter_bytes == 4096 + 512 + 5242880 and device.aliased_output_bytes == 4096
    assert device.output_bytes == 512
    assert "69%" in render_memory(report)
    old = memory_report(_sig(OLD))
    assert {s.memory_space for s in old.spaces} == {0, 5}
    tiny = memory_report(_sig(NEW), waste_threshold=0.95, min_waste_bytes=0)
    assert [r.entry.name for r in tiny.waste] == ["step", "c"]  # s32[] and f32[4] in 512-byte tiles
    assert memory_report(_sig(NEW), waste_threshold=0.95, min_waste_bytes=1024).waste == ()


def test_untiled_side_is_warned_about():
    untiled = _sig(OLD.replace(OLD.splitlines()[0], "HloModule m"))
    diff = diff_signatures(untiled, _sig(OLD))
    assert diff.warnings and "no tiled layouts" in diff.warnings[0]
    assert "warning:" in render_diff(diff)


DONORS = """HloModule donors, buffer_donor={ (0, {}), (1, {}), (2, {}) }, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, f32[16,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)})->(f32[16,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, f32[4]{0:T(256)})}

ENTRY %main (a: f32[8,128], b: f32[16,128], c: f32[8,128]) -> (f32[16,128], f32[8,128], f32[4]) {
  %a = f32[8,128]{1,0} parameter(0)
  %b = f32[16,128]{1,0} parameter(1)
  %c = f32[8,128]{1,0} parameter(2)
  %b2 = f32[16,128]{1,0} negate(%b)
  %a2 = f32[8,128]{1,0} add(%a, %c)
  %s = f32[4]{0} slice(%b), slice={[0:1], [0:4]}
  ROOT %t = (f32[16,128]{1,0}, f32[8,128]{1,0}, f32[4]{0}) tuple(%b2, %a2, %s)
}
"""


def test_donated_parameters_alias_outputs_of_their_size_as_xla_pairs_them():
    """`buffer_donor` (jax's donation under shard_map) leaves the aliasing to XLA, which pairs donors and
    outputs of equal buffer size, both sorted largest first and the earlier parameter first among equals."""
    from hloscan.hlo.signature import entry_aliases
    module = parse_text(DONORS)[0]
    pairs = [(a.output_index, a.parameter) for a in entry_aliases(module)]
    assert pairs == [((0,), 1), ((1,), 0)]  # the 16-row output takes b, the 8-row one a (not c); f32[4] none
    sig = module_signature(module)
    assert [bool(p.aliases) for p in sig.parameters] == [True, True, False]
    report = memory_report(sig).spaces[0]
    assert report.output_bytes == 256 * 4 and report.aliased_output_bytes == 16 * 128 * 4 + 8 * 128 * 4
