"""E0102 recognition and explanation."""

from __future__ import annotations

import json

from hloscan.analyses.layouts.explain import explain_e0102, is_e0102, match_message, render_text
from messages import SEED, UNTILED_PRINT



def test_seed_message():
    e = explain_e0102(SEED)
    assert e is not None
    assert (e.executable, e.parameter) == ("jit_embedding_pipeline_step_fn", 2482)
    assert (e.expected.reported_bytes, e.expected.computed_bytes, e.expected.agrees) == (5242880, 5242880, True)
    assert (e.got.reported_bytes, e.got.computed_bytes, e.got.agrees) == (1638400, 1638400, True)
    assert [d.aspect for d in e.differences] == ["dimension order"]
    assert e.differences[0].expected == "{2,1,0}" and e.differences[0].got == "{1,2,0}"
    (pad,) = e.expected.report.padding
    assert (pad.dim, pad.size, pad.padded_size) == (2, 40, 128)
    assert e.got.report.padding == ()
    assert any("dim 2 (40 -> 128)" in n and "expected" in n for n in e.padding_notes)
    text = render_text(e)
    for needle in ("5242880", "1638400", "dim 2", "40 padded to 128", "jit_embedding_pipeline_step_fn",
                   "input_formats", "device_put", "checkpoint"):
        assert needle in text, needle
    data = json.loads(json.dumps(e.to_json()))
    assert data["expected"]["padding"][0] == {"dim": 2, "size": 40, "padded_size": 128, "tile": 128, "position": 0}
    assert data["size_difference"] == 3604480


def test_printed_layout_without_tiles_is_called_out():
    e = explain_e0102(UNTILED_PRINT)
    assert e is not None and e.executable is None and e.parameter == 0
    assert e.expected.agrees is True and e.expected.computed_bytes == 6144
    assert e.got.agrees is False and e.got.computed_bytes == 240
    assert e.got.layout_inferred
    assert e.got.effective_shape.to_text() == "f32[5,4,3]{2,1,0:T(4,128)}"
    assert e.got.report.bytes == 10240
    assert e.got.candidates[0].is_default
    note = " ".join(e.notes)
    assert "does not account for 10240" in note and "{2,1,0:T(4,128)}" in note
    assert [d.aspect for d in e.differences] == ["dimension order"]
    assert "10240" in render_text(e) and "T(4,128)" in render_text(e)


def test_code_header_traceback_and_tiling_difference():
    text = (
        "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
        "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: E0102: RuntimeProgramInputMismatch:\n"
        "Executable(pjit_train_step) expected parameter 17 of size 53248 (bf16[100,256]{1,0:T(8,128)(2,1)}) "
        "but got buffer with incompatible size 57344 (bf16[100,256]{1,0:T(16,128)(2,1)})\n"
        "See https://openxla.org/xla/errors/error_0102 for more details.\n"
    )
    e = explain_e0102(text)
    assert e is not None and e.executable == "pjit_train_step" and e.parameter == 17
    assert e.expected.agrees and e.got.agrees
    assert [d.aspect for d in e.differences] == ["tiling"]
    assert [(p.dim, p.padded_size) for p in e.got.report.padding] == [(0, 112)]
    assert any("net of both paddings" in n for n in e.padding_notes)
    assert any("large 2nd-minor" in c for c in e.causes)


def test_int4_packing_difference():
    text = ("INVALID_ARGUMENT: Executable(jit_fn) expected parameter 3 of size 524288 "
            "(s4[1024,1024]{1,0:T(8,128)(8,1)E(4)}) but got buffer with incompatible size 1048576 "
            "(s4[1024,1024]{1,0:T(8,128)(8,1)})")
    e = explain_e0102(text)
    assert e.expected.agrees and e.got.agrees
    assert "element packing" in [d.aspect for d in e.differences]
    assert any("Sub-byte packing" in c for c in e.causes)


def test_memory_space_and_tiling():
    text = ("Executable(jit_<lambda>) expected parameter 1 of size 512 (f32[1,128]{1,0:T(1,128)S(5)}) but got "
            "buffer with incompatible size 4096 (f32[1,128]{1,0:T(8,128)})")
    e = explain_e0102(text)
    assert e.executable == "jit_<lambda>"
    aspects = [d.aspect for d in e.differences]
    assert "memory space" in aspects and "tiling" in aspects
    assert any("implicit" in n or "dim 0 (1 -> 8)" in n for n in e.padding_notes)
    assert any("memory kind" in f for f in e.fixes)


def test_message_without_shapes():
    e = explain_e0102("Executable(f) expected parameter 3 of size 1024 but got buffer with incompatible size 512")
    assert e is not None and e.expected.shape is None and e.got.reported_bytes == 512
    assert e.differences == () and render_text(e)


def test_unparsable_shape_degrades_to_sizes():
    e = explain_e0102("expected parameter 2 of size 1024 (not a shape) but got buffer with incompatible size 512 "
                      "(f32[128]{0})")
    assert e is not None and e.expected.parse_error and e.got.computed_bytes == 512
    assert "sizes only" in " ".join(e.notes)


def test_not_e0102():
    for text in ("RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 1.00G.",
                 "INVALID_ARGUMENT: E1200: CompileTimeHostOffloadOutputLocationMismatch: ...", ""):
        assert explain_e0102(text) is None
        assert not is_e0102(text)
    assert match_message(SEED).expected_bytes == 5242880
