"""hloscan confirm's pure-Python parts on the tpu-oracle/real corpus, no compile: the compiler's error texts
classified as recorded, its dump files read back to the recorded figures, the minimal per-kernel modules,
and the static-vs-compiler comparison."""

from __future__ import annotations

import json

import pytest

import hloscan.checks  # noqa: F401  (registers the checks)
from corpus import FIXTURES, corpus_dir, manifest
from hloscan.confirm import compare, exact, readback
from hloscan.confirm.exact import kernel_modules, without_metadata
from hloscan.confirm.topology import check_topology, libtpu_name, topology_for
from hloscan.confirm.verdict import (HBM, HOST_OFFLOAD, MISALIGNED, OK, SCOPED_VMEM, VMEM_CAPACITY, Verdict, classify,
                                     recorded_kind)
from hloscan.hlo.loader import load_file, load_text
from hloscan.lint.config import parse_config
from hloscan.lint.scan import scan

REAL = "tpu-oracle/real"


def _rows(predicate=lambda r: True):
    return [r for r in manifest(REAL) if predicate(r)]


# ---------------------------------------------------------------------------------------------- verdict


def test_every_recorded_compiler_error_is_classified_as_recorded():
    rows = _rows(lambda r: r["verdict"] != "ok")
    assert len(rows) >= 25  # 12 E1001, 7 E1200, 4 HBM, 2 whole-VMEM in the corpus
    wrong = [(r["case"], recorded_kind(r["verdict"], r["error_kind"]), classify(r["error"]).kind) for r in rows
             if classify(r["error"]).kind != recorded_kind(r["verdict"], r["error_kind"])]
    assert not wrong
    kinds = {classify(r["error"]).kind for r in rows}
    assert kinds == {SCOPED_VMEM, HOST_OFFLOAD, HBM, VMEM_CAPACITY}


def test_sizes_and_instruction_read_from_the_e1001_message():
    for r in _rows(lambda r: r["verdict"].startswith("E1001")):
        v = classify(r["error"])
        assert abs(v.size_bytes - int(r["err_size_bytes"])) <= 1 and v.limit_bytes == int(r["err_limit_bytes"])
        assert v.instruction and f"%{v.instruction} = " in r["error"]
        assert v.rule == "HLO201" and v.xla_error == "E1001"


def test_hbm_and_capacity_messages():
    hbm = [classify(r["error"]) for r in _rows(lambda r: r["error_kind"] == "hbm_temporaries_oom")]
    assert hbm and all(v.rule == "HLO401" and v.xla_error == "E1000" and v.size_bytes > v.limit_bytes for v in hbm)
    cap = [classify(r["error"]) for r in _rows(lambda r: r["error_kind"] == "vmem_capacity_oom")]
    assert cap and all(v.rule == "HLO205" and v.xla_error is None and v.size_bytes > v.limit_bytes for v in cap)
    assert classify(None).ok and classify("INTERNAL: something new").rule == "HLO910"


def test_the_compilers_e2002_message_is_the_misaligned_block_rule():
    """The message libtpu 0.0.42.1 gave for fixtures/confirm/misaligned (jax's own block check skipped)."""
    error = ("INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: Failed to set window params for input 0: "
             "E2002: CompileTimeMosaicMisalignedBlockAndTiling:\nOperand of shape (..., 64, 256) has tiling "
             "(8, 128), but its block shape (..., 4, 128) is not divisible by tiling evenly nor matches the full "
             "shape\nSee https://openxla.org/xla/errors/error_2002 for more details.")
    v = classify(error)
    assert v.kind == MISALIGNED and v.rule == "HLO203" and v.xla_error == "E2002"


# ---------------------------------------------------------------------------------------------- read back


def test_after_codegen_read_back_as_the_manifest_recorded():
    rows = _rows(lambda r: bool(r["scoped_per_instr"]))
    assert len(rows) >= 50
    for r in rows:
        kernels, unread = readback.compiled_kernels(corpus_dir(REAL) / r["case"])
        assert not unread, r["case"]
        assert {k.name: k.scoped_bytes for k in kernels} == json.loads(r["scoped_per_instr"]), r["case"]
        assert all(k.body and k.op_name for k in kernels), r["case"]


def test_memory_usage_report_totals_read_back_as_recorded():
    rows = _rows(lambda r: bool(r["mem_report_totals"]))
    assert len(rows) >= 20
    for r in rows:
        got = readback.report_totals(corpus_dir(REAL) / r["case"])
        assert got == json.loads(r["mem_report_totals"]), r["case"]


def test_a_renamed_kernel_is_found_by_its_mosaic_body():
    """Optimisation renames kernels (pallas_call.4 -> jvp_jit_flash_attention__.1): each kernel of the
    compiled module gets the after_codegen figure of the kernel with the same body."""
    case = corpus_dir(REAL) / "v5e__pallas__flash_bwd_q128_km256_k128"
    compiled, _ = readback.compiled_kernels(case)
    module = load_file(str(case / "before_optimizations.txt")).modules[0]
    figures = compare.kernel_figures(module, "v5e", compiled)
    recorded = json.loads(next(r for r in _rows() if r["case"] == case.name)["scoped_per_instr"])
    assert len(figures) == 3 and len(set(recorded.values())) == 3
    assert all(f.names == (name,) and recorded[name] == f.compiler_bytes
               for f in figures for name in f.names)
    assert {f.instruction for f in figures} == {"pallas_call.4", "pallas_call.12", "pallas_call.15"}


def test_unreadable_after_codegen_is_said_not_raised(tmp_path):
    (tmp_path / "m.after_codegen.txt").write_text('HloModule m\n\nENTRY %e {\n  %k = tpu_custom_call((\n}\n')
    (tmp_path / "m.after_optimizations-memory-usage-report.txt").write_bytes(b"\xff\xfe not text")
    kernels, unread = readback.compiled_kernels(tmp_path)
    assert kernels == [] and len(unread) == 1 and unread[0].startswith("m.after_codegen.txt: ")
    assert readback.report_totals(tmp_path) == {}


# ---------------------------------------------------------------------------------------------- exact


def test_every_corpus_kernel_gets_a_minimal_module_that_parses():
    count = 0
    for r in _rows(lambda r: r["family"] == "pallas"):
        module = load_file(str(corpus_dir(REAL) / r["case"] / "before_optimizations.txt")).modules[0]
        originals = {inst.name: inst for _, inst in module.with_opcode("custom-call")}
        for km in kernel_modules(module):
            assert km.text is not None, (r["case"], km.problem)
            alone = load_text(km.text)[0]
            calls = alone.with_opcode("custom-call")
            assert len(calls) == 1
            inst, orig = calls[0][1], originals[km.instruction]
            assert inst.attr("backend_config") == orig.attr("backend_config")
            assert inst.shape.to_text() == orig.shape.to_text() and len(inst.operands) == len(orig.operands)
            assert "metadata={op_name" not in inst.attrs_text
            count += 1
    assert count >= 100


ALONE = FIXTURES / "confirm" / "alone" / "v6e_flash_bwd_q128"
FLASH_BWD = corpus_dir(REAL) / "v6e__pallas__flash_bwd_q128_km256_k128"


def _flash_bwd():
    path = str(FLASH_BWD / "before_optimizations.txt")
    module = load_file(path).modules[0]
    recorded = {k.body: k.scoped_bytes for k in readback.compiled_kernels(FLASH_BWD)[0]}
    return path, module, recorded


@pytest.mark.parametrize("kernel, moved", [
    ("pallas_call.4", ("results 0, 1, 2 were in VMEM (S(1)) in the whole program, in HBM alone",)),
    ("pallas_call.12", ("operands 0, 1, 2, 3, 4, 5, 6 were in VMEM (S(1)) in the whole program, in HBM alone",)),
    ("pallas_call.15", ("operands 0, 1, 2, 3, 4, 5, 6 were in VMEM (S(1)) in the whole program, in HBM alone",)),
])
def test_the_alone_figure_moved_to_the_whole_programs_placement_is_the_whole_programs(kernel, moved):
    """Alone these kernels got 1.4-3.4x the whole program's figure; with the placement read from the
    after_codegen beside the dump, moved by the windows of what the whole program kept in VMEM, it is the
    whole program's figure to the byte."""
    path, module, recorded = _flash_bwd()
    whole = exact.whole_kernels(module, path, "v6e")
    assert {w.source for w in whole.values()} == {"after_codegen.txt"}
    inst = next(i for _, i in module.with_opcode("custom-call") if i.name == kernel)
    [alone] = readback.compiled_kernels(ALONE / kernel)[0]
    figure = exact.compared(exact.ExactFigure(kernel, inst.line, "compiled", None, None, 0.0), alone,
                            whole[kernel], inst, "v6e")
    in_whole_program = recorded[alone.body]
    assert figure.scoped_bytes == alone.scoped_bytes > in_whole_program
    assert figure.differences == moved and figure.placed_bytes == in_whole_program


def test_whole_program_placement_from_the_module_itself_or_predicted():
    path, module, _ = _flash_bwd()
    predicted = exact.whole_kernels(module, None, "v6e")
    assert {w.source for w in predicted.values()} == {exact.PREDICTED}
    # hloscan predicts the dq and dkv kernels' seven operands in VMEM, as the compiler placed them.
    assert predicted["pallas_call.15"].placement.operands == (1,) * 7
    after = load_file(str(FLASH_BWD / "after_optimizations.txt")).modules[0]
    own = exact.whole_kernels(after, None, "v6e")
    assert {w.source for w in own.values()} == {"this module, after optimisation"}
    assert sorted(w.placement.results for w in own.values())[-1] == (1, 1, 1)


def test_a_post_optimisation_kernel_gets_a_minimal_module_the_converter_accepts():
    """The HLO->MLIR conversion refuses tiled layouts and memory spaces: the minimal module of an
    after_optimizations kernel keeps only minor-to-major layouts."""
    after = load_file(str(FLASH_BWD / "after_optimizations.txt")).modules[0]
    kms = kernel_modules(after)
    assert len(kms) == 3
    for km in kms:
        head, _, body = km.text.partition("ENTRY")
        params = [line for line in body.splitlines() if "parameter(" in line]
        assert params and not any(":T(" in line or "S(1)" in line for line in params + [head])


def test_without_metadata_keeps_the_other_attributes():
    tail = ', custom_call_target="x", metadata={op_name="a{b}" stack_frame_id=3}, backend_config={"k": 1}'
    assert without_metadata(tail) == ', custom_call_target="x", backend_config={"k": 1}'


def test_topologies():
    assert topology_for("v5e") == "v5e:2x2" and topology_for("v5e", 8) == "v5e:2x4"
    assert topology_for("v5p", 8) == "v5p:2x2x2" and topology_for("v7x") == "v7x:2x2x1"
    assert check_topology("v5e:2x2") is None and check_topology("v7x:2x2x1") is None
    assert "unknown topology" in check_topology("v9z:2x2")
    assert libtpu_name("v5e") == "v5e:2x2" and libtpu_name("v7x") == "tpu7x:2x2x1"
    assert libtpu_name("v7x:2x2x2") == "tpu7x:2x2x2" and libtpu_name("v6e:2x4") == "v6e:2x4"


# ---------------------------------------------------------------------------------------------- compare


@pytest.fixture(scope="module")
def e1001_case():
    """A real E1001 case: its static findings and the compiler's recorded verdict."""
    case = corpus_dir(REAL) / "v5e__pallas__flash_fwd_q2048_km2048_k2048"
    path = str(case / "before_optimizations.txt")
    result = scan([path], parse_config({"tpu": "v5e"}), keep_modules=True)
    row = next(r for r in _rows() if r["case"] == case.name)
    return result.files[0].modules[0], path, result.findings, classify(row["error"])


def test_a_static_e1001_finding_is_confirmed_and_marked(e1001_case):
    module, path, static, verdict = e1001_case
    assert any(f.code == "HLO201" for f in static)
    found, statuses = compare.compare(module, path, static, verdict, "0.0.42.1")
    hlo201 = [(f, s) for f, s in zip(found, statuses) if f.code == "HLO201"]
    assert [s for _, s in hlo201] == ["confirmed"]
    f = hlo201[0][0]
    assert "confirmed by the TPU compiler, libtpu 0.0.42.1" in f.message
    assert f.data[compare.CONFIRMATION_KEY]["verdict"] == "E1001 (scoped_vmem_oom)"
    assert "missed" not in statuses


def test_the_same_finding_is_contradicted_when_the_compiler_accepts(e1001_case):
    module, path, static, _ = e1001_case
    found, statuses = compare.compare(module, path, static, Verdict(OK), "0.0.42.1")
    assert "contradicted" in statuses and "missed" not in statuses
    assert any("contradicted: the TPU compiler accepted it" in f.message for f in found)


def test_a_compiler_error_no_finding_predicted_is_reported_as_the_rules_finding(e1001_case):
    module, path, static, verdict = e1001_case
    found, statuses = compare.compare(module, path, [], verdict, "0.0.42.1")
    assert statuses == ["missed"]
    f = found[0]
    assert f.code == "HLO201" and f.xla_error == "E1001" and f.name == "scoped-vmem-exceeds-limit"
    assert "missed by the static checks" in f.message and f.hint
    # The compiler names the optimised instruction (flash_attention.1); found here by its op_name.
    assert f.instruction == "pallas_call.1" and f.source is not None and f.line > 1


def test_an_e1200_on_another_error_is_not_reached(e1001_case):
    module, path, static, _ = e1001_case
    e1200 = Verdict(HOST_OFFLOAD, "E1200: ...", "tuple.7")
    _, statuses = compare.compare(module, path, static, e1200, "x")
    assert "not-reached" in statuses and "missed" in statuses
