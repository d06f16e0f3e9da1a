"""The layout commands (size, diff, memory, signature), `explain`, and the HLO301 padding-waste check."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscan.cli import main
from hloscan.lint.engine import Selection, run_checks, selected_checks
from hloscan.analyses.vmem.explain import explain_e1001, parse_size
from hloscan.hlo.parser import parse_text
from messages import SEED, UNTILED_PRINT
from corpus import CORPUS, FIXTURES as FIXTURES_ROOT, require_path as require, tsv_rows

LAYOUT = CORPUS / "tpu-oracle" / "layout"
VMEM = CORPUS / "tpu-oracle" / "vmem"
FIXTURES = FIXTURES_ROOT / "checks" / "HLO301"

E1001_TEXT = "Scoped allocation with size 17.00M and limit 16.00M exceeded scoped vmem limit by 1.00M"


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, list(args), input=stdin)


def case(name: str, stage: str = "after_optimizations.txt") -> str:
    return str(require(LAYOUT / name / stage))


# ---------------------------------------------------------------------------------------------------- size


def test_size_text_names_the_padded_dimension():
    result = run("size", "bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}", "bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}")
    assert result.exit_code == 0, result.output
    assert "5242880 bytes" in result.output and "1638400 unpadded" in result.output
    assert "dim 2 (minor-most) of size 40 padded to 128" in result.output
    assert "1638400 bytes (1.56 MiB), 1638400 unpadded\n  no padding" in result.output


def test_size_json():
    result = run("size", "--format", "json", "f32[5,4,3]{2,1,0:T(4,128)}", "(f32[8]{0:T(128)}, s32[]{:T(128)})")
    assert result.exit_code == 0
    first, tup = json.loads(result.output)
    assert (first["shape"], first["bytes"], first["unpadded_bytes"]) == ("f32[5,4,3]{2,1,0:T(4,128)}", 10240, 240)
    assert [(p["dim"], p["size"], p["padded_size"]) for p in first["padding"]] == [(2, 3, 128)]
    assert tup["bytes"] == 1024 and len(tup["leaves"]) == 2


def test_size_bad_shape_exit_2_with_caret_others_printed():
    result = run("size", "f32[3,x]", "bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}")
    assert result.exit_code == 2
    assert "HLO001" in result.output and "<shape 1>:1:7" in result.output
    lines = result.output.splitlines()
    caret = next(i for i, ln in enumerate(lines) if ln.strip() == "^")
    assert lines[caret - 1].strip() == "f32[3,x]" and lines[caret].index("^") == lines[caret - 1].index("x")
    assert "5242880 bytes" in result.output


def test_size_bad_shape_json_keeps_order():
    result = run("size", "--format", "json", "bf16[2]{0:T(256)}", "f32[3,x]")
    assert result.exit_code == 2
    good, bad = json.loads(result.stdout)
    assert good["bytes"] == 512 and bad["error"]["code"] == "HLO001" and bad["error"]["col"] == 7


# -------------------------------------------------------------------------------------------- explain E0102


def test_explain_seed_e0102():
    result = run("explain", SEED)
    assert result.exit_code == 0, result.output
    for needle in ("E0102", "5242880", "1638400", "dim 2 (40 -> 128)", "jit_embedding_pipeline_step_fn"):
        assert needle in result.output, needle


def test_explain_seed_json_and_stdin():
    result = run("explain", "-", "--format", "json", stdin=SEED + "\n")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["kind"] == "E0102" and data["parameter"] == 2482
    assert (data["expected"]["reported_bytes"], data["got"]["reported_bytes"]) == (5242880, 1638400)
    assert data["expected"]["padding"][0] == {"dim": 2, "size": 40, "padded_size": 128, "tile": 128, "position": 0}


def test_explain_untiled_print_6144_10240():
    result = run("explain", UNTILED_PRINT)
    assert result.exit_code == 0
    assert "6144" in result.output and "10240" in result.output and "T(4,128)" in result.output


def test_explain_unrecognised_exit_2():
    result = run("explain", "Segmentation fault (core dumped)")
    assert result.exit_code == 2
    assert "not a recognised XLA error" in result.output


def test_explain_e0102_with_dump_says_which_side():
    message = SEED.replace("jit_embedding_pipeline_step_fn", "jit__lambda").replace("2482", "0")
    expected = run("explain", message, "--dump", case("v4__pair_bfloat16_16x1280x40_m2m012"))
    assert expected.exit_code == 0, expected.output
    assert "parameter 0 is %x.1" in expected.output and "matches the EXPECTED side" in expected.output
    got = run("explain", message, "--dump", case("v4__pair_bfloat16_16x1280x40_m2m021"), "--format", "json")
    assert json.loads(got.output)["dump"]["matches"] == "got"
    other = run("explain", message, "--dump", case("v4__pair_bfloat16_16x1280x40_m2m102"), "--format", "json")
    assert json.loads(other.output)["dump"]["matches"] == "neither"


def test_explain_dump_unreadable_exit_2(tmp_path):
    bad = tmp_path / "bad.hlo.txt"
    bad.write_text("HloModule m\n\nENTRY %e {\n  %p = f32[ parameter(0)\n}\n")
    result = run("explain", SEED, "--dump", str(bad))
    assert result.exit_code == 2 and "HLO001" in result.output


# -------------------------------------------------------------------------------------------- explain E1001


def test_explain_e1001_message():
    result = run("explain", E1001_TEXT, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["size_bytes"], data["limit_bytes"], data["over_bytes"]) == (17 * 2**20, 16 * 2**20, 2**20)
    assert data["suggested_limit_bytes"] == 18 * 2**20
    assert any("vmem_limit_bytes=18 * 1024 * 1024" in f for f in data["fixes"])
    assert any("--xla_tpu_scoped_vmem_limit_kib=18432" in f for f in data["fixes"])


def test_parse_size_units():
    assert parse_size("340.0", "K") == (340 * 1024, 51)
    assert parse_size("16.33", "M")[0] == 17123246
    assert parse_size("512", "") == (512, 0)


def test_e1001_oracle_messages_with_dump():
    manifest = require(VMEM / "MANIFEST.tsv")
    checked = 0
    for row in tsv_rows(manifest):
            error = VMEM / row["case"] / "error.txt"
            if not row["err_size_bytes"] or not error.exists() or "Scoped allocation" not in error.read_text():
                continue
            dump = VMEM / row["case"] / "after_optimizations.txt"
            e = explain_e1001(error.read_text(), parse_text(dump.read_text(), str(dump)))
            assert (e.size_bytes, e.limit_bytes) == (int(row["err_size_bytes"]), int(row["err_limit_bytes"]))
            assert e.suggested_limit_bytes > e.size_bytes and e.suggested_limit_bytes % 2**20 == 0
            assert e.instruction == "fn.1" and e.kernel == "fn" and e.source and e.source.startswith("tpu_oracle/")
            if row["vmem_limit_bytes"]:
                assert e.configured_limit_bytes == int(row["vmem_limit_bytes"])
            checked += 1
    assert checked >= 15


def test_explain_e1001_cli_names_kernel_and_source():
    folder = require(VMEM / "v5e__mm_float32_512x2048x512")
    result = run("explain", "-", "--dump", str(folder / "after_optimizations.txt"),
                 stdin=(folder / "error.txt").read_text())
    assert result.exit_code == 0, result.output
    assert "kernel: fn (instruction %fn.1)" in result.output and "source: tpu_oracle/gen.py:" in result.output
    assert "vmem_limit_bytes=19 * 1024 * 1024" in result.output


# ---------------------------------------------------------------------------------------------------- diff


def _pairs() -> dict[tuple[str, str], list[dict[str, str]]]:
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in tsv_rows(require(LAYOUT / "MANIFEST.tsv")):
        if row["kind"] == "pair" and row["verdict"] == "ok":
            groups[(row["generation"], row["case"].split("__", 1)[1].rsplit("_", 1)[0])].append(row)
    return groups


def test_diff_pairs_find_exactly_the_differing_parameter():
    checked = 0
    for rows in _pairs().values():
        for a, b in zip(rows, rows[1:]):
            result = run("diff", "--format", "json", case(a["case"]), case(b["case"]))
            data = json.loads(result.output)
            if a["layout"] == b["layout"]:
                assert result.exit_code == 0 and data["layout_changes"] == []
                continue
            (change,) = data["layout_changes"]
            assert (change["old_index"], change["new_index"]) == (0, 0)
            assert (change["old_bytes"], change["new_bytes"]) == (int(a["bytes"]), int(b["bytes"]))
            assert result.exit_code == (1 if a["bytes"] != b["bytes"] else 0)
            checked += 1
    assert checked >= 100


def test_diff_text_seed_pair_and_self():
    old, new = case("v4__pair_bfloat16_16x1280x40_m2m012"), case("v4__pair_bfloat16_16x1280x40_m2m021")
    result = run("diff", old, new)
    assert result.exit_code == 1
    assert "parameter 0 (x.1): 5242880 -> 1638400 bytes" in result.output and "E0102" in result.output
    same = run("diff", old, old)
    assert same.exit_code == 0 and "identical" in same.output


def test_diff_unreadable_exit_2(tmp_path):
    result = run("diff", str(tmp_path / "missing.txt"), case("v4__pair_bfloat16_16x1280x40_m2m012"))
    assert result.exit_code == 2 and "HLO001" in result.output


# ------------------------------------------------------------------------------------- memory and signature


def test_memory_json_shape():
    result = run("memory", "--format", "json", "--top", "1", "--waste-threshold", "0.5",
                 case("v4__pair_bfloat16_16x1280x40_m2m012"))
    assert result.exit_code == 0
    (report,) = json.loads(result.output)
    assert set(report) >= {"path", "module", "memory_spaces", "largest", "waste", "total_waste_bytes"}
    assert len(report["largest"]) == 1 and report["largest"][0]["bytes"] == 5242880
    assert report["waste"][0]["waste_fraction"] == 0.6875 and report["waste_threshold"] == 0.5


def test_signature_json_shape_and_source_line():
    result = run("signature", "--format", "json", case("v4__pair_bfloat16_16x1280x40_m2m012"))
    assert result.exit_code == 0
    (sig,) = json.loads(result.output)
    (param,) = sig["parameters"]
    assert (param["name"], param["bytes"], param["unpadded_bytes"]) == ("x.1", 5242880, 1638400)
    assert sig["outputs"][0]["source"].startswith("tpu_oracle/gen.py:")
    text = run("signature", case("v4__pair_bfloat16_16x1280x40_m2m012"))
    assert "parameter 0 (x.1): bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}  5242880 bytes" in text.output


# --------------------------------------------------------------------------------------------------- HLO301


def _hlo301(path: Path, options=None):
    checks = selected_checks(Selection(("HLO301",)))
    module = parse_text(path.read_text(), str(path))[0]
    return run_checks(module, str(path), checks, options)


# Fixtures with a `// hloscan:` options header run with their options in tests/checks/test_check_fixtures.py.
@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("*.hlo.txt") if "// hloscan:" not in p.read_text()),
                         ids=lambda p: p.name)
def test_hlo301_fixtures(path: Path):
    expected = {i for i, line in enumerate(path.read_text().splitlines(), 1) if "// expect: HLO301" in line}
    assert path.name.startswith("fires_") == bool(expected)
    assert {f.span.line for f in _hlo301(path)} == expected


def test_hlo301_message_hint_and_options():
    path = FIXTURES / "fires_bf16_minor_40.hlo.txt"
    first = _hlo301(path)[0]
    assert "5242880 bytes" in first.message and "1638400 bytes of data" in first.message
    assert "dim 2 (minor-most) of size 40 padded to 128" in first.message and "(69%)" in first.message
    assert "multiple of 128" in first.hint and "{1,2,0}" in first.hint
    assert first.data["smaller_layout"]["bytes"] == 1638400
    assert _hlo301(path, {"tiled-padding-waste": {"threshold": 0.7}}) == []
    assert len(_hlo301(path, {"tiled-padding-waste": {"min_bytes": 4 * 2**20}})) == 1
