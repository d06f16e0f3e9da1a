"""`hloscan vmem` and the HLO201-HLO204 checks: JSON shape, exit codes, text arithmetic, a corpus case."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus import CORPUS, FIXTURES as FIXTURES_ROOT
from hloscan.cli import main

FIXTURES = FIXTURES_ROOT / "checks" / "HLO201"
FIRES = FIXTURES / "fires_f32_matmul_blocks_18mib.hlo.txt"
QUIET = FIXTURES / "quiet_f32_matmul_blocks_4mib.hlo.txt"
VMEM = CORPUS / "tpu-oracle" / "vmem"
E1001_CASE = "v5e__mm_float32_512x2048x512"
KERNEL_KEYS = {"path", "instruction", "name", "grid", "blocks", "estimate_bytes", "kind", "limit_bytes",
               "limit_source", "verdict", "tpu", "tpu_assumed"}


def _run(*args: str):
    # click >= 8.2 keeps stderr apart from stdout by default, so stdout stays parseable JSON.
    return CliRunner().invoke(main, list(args))


def _corpus_case(name: str) -> Path:
    case = VMEM / name
    if not (case / "before_optimizations.txt").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"TPU oracle corpus missing at {VMEM} (required when CI=true)")
        pytest.skip(f"TPU oracle corpus not found at {VMEM}")
    return case


def test_json_shape_lists_fitting_and_failing_kernels():
    result = _run("vmem", "--format", "json", str(FIRES), str(QUIET))
    assert result.exit_code == 1, result.output
    kernels = json.loads(result.stdout)["kernels"]
    assert [k["verdict"] for k in kernels] == ["E1001", "fits"]
    for kernel in kernels:
        assert KERNEL_KEYS <= kernel.keys()
        assert kernel["kind"] == "estimate" and kernel["tpu"] == "v5e" and kernel["tpu_assumed"] is True
        assert kernel["limit_source"] == "default" and kernel["limit_bytes"] == 16 * 1024 * 1024
    big = kernels[0]
    assert big["estimate_bytes"] == 18 * 1024 * 1024 and big["grid"] == [2, 2]
    assert [b["block_shape"] for b in big["blocks"]] == [[512, 2048], [2048, 512], [512, 512]]
    assert sum(b["total_bytes"] for b in big["blocks"]) == big["estimate_bytes"]


def test_fitting_kernels_exit_zero_and_tpu_is_not_assumed_when_given():
    result = _run("vmem", "--format", "json", "--tpu", "v6e", str(FIRES))
    assert result.exit_code == 0, result.output
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["verdict"] == "fits" and kernel["tpu_assumed"] is False and kernel["limit_bytes"] == 32 << 20


def test_vmem_limit_option_applies():
    result = _run("vmem", "--format", "json", "--vmem-limit-kib", "8192", str(QUIET))
    assert result.exit_code == 0
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["limit_source"] == "option" and kernel["limit_bytes"] == 8 << 20


def test_bad_input_exits_2_and_other_files_are_still_listed(tmp_path):
    bad = tmp_path / "bad.hlo.txt"
    bad.write_text("HloModule broken\n\nENTRY %main {\n  %x = f32[ parameter(0)\n}\n")
    result = _run("vmem", "--format", "json", str(bad), str(QUIET))
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert len(payload["kernels"]) == 1
    assert payload["errors"][0]["code"] == "HLO001"
    assert "HLO001" in result.stderr


def test_text_output_shows_the_arithmetic():
    result = _run("vmem", str(FIRES))
    assert result.exit_code == 1
    text = result.stdout
    assert re.search(r"input\s+0 f32\[512,2048\]\s+T\(8,128\)\s+->\s+4,194,304 B x 2 =\s+8,388,608 B", text)
    assert "18.00 MiB (18874368 bytes)" in text and "E1001" in text and "assumed" in text
    assert "vmem_limit_bytes=20971520" in text


def test_check_reports_e1001_on_corpus_case():
    case = _corpus_case(E1001_CASE)
    result = _run("check", "--tpu", "v5e", "--format", "json", str(case / "before_optimizations.txt"))
    assert result.exit_code == 1
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "HLO201"]
    assert finding["xla_error"] == "E1001" and finding["severity"] == "error"
    # No allowance applies: the range runs from the estimate to the most the body could spill.
    assert "estimate (range" in finding["message"] and "assumed" not in finding["message"]
    data = finding["data"]
    assert data["tpu"] == "v5e" and data["tpu_assumed"] is False
    assert data["fitting_limit_bytes"] and data["block_hint"]["estimate_bytes"] <= data["limit_bytes"]


def test_measured_figure_is_reported_as_measured():
    case = _corpus_case("v5e__mm_float32_256x1024x256")
    if not (case / "after_codegen.txt").is_file():
        pytest.skip("no after_codegen.txt")
    result = _run("vmem", "--format", "json", "--tpu", "v5e", str(case / "after_codegen.txt"))
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert kernel["kind"] == "measured" and kernel["verdict"] == "fits"


def test_tight_kernel_warns_hlo202():
    result = _run("check", "--vmem-limit-kib", "19456", "--format", "json", str(FIRES))
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert codes == ["HLO202"]


def test_undecodable_body_is_a_note_with_whole_array_estimate(tmp_path):
    broken = tmp_path / "broken.hlo.txt"
    broken.write_text(QUIET.read_text().replace('"body": "TUzv', '"body": "XXXX'))
    result = _run("check", "--format", "json", str(broken))
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "HLO204"]
    assert finding["severity"] == "note" and "whole arrays" in finding["message"]


def test_dynamic_grid_dimension_prints_as_unknown():
    """gmm's group axis is known only at run time; Mosaic stores it as INT64_MIN, which must not reach users."""
    case = FIXTURES_ROOT / "oracle_new" / "real2_rpagmm" / "v5e__pallas__gmm_t128x512x256" / "before_optimizations.txt"
    result = _run("vmem", "--tpu", "v5e", "--format", "json", str(case))
    (kernel,) = json.loads(result.stdout)["kernels"]
    assert None in kernel["grid"] and all(d is None or d > 0 for d in kernel["grid"])
    text = _run("vmem", "--tpu", "v5e", str(case)).stdout
    assert re.search(r" grid \d+x\?x\d+\n", text) and "-9223372036854775808" not in text


def test_estimate_with_an_allowance_gives_its_measured_range():
    case = FIXTURES_ROOT / "oracle_new" / "real7" / "v6e__pallas__flash_fwd_s_q1024_km2048_k1024" / "before_optimizations.txt"
    (kernel,) = json.loads(_run("vmem", "--tpu", "v6e", "--format", "json", str(case)).stdout)["kernels"]
    (allowance,) = kernel["allowances"]
    assert allowance["rule"] == "attention-forward" and allowance["bytes"] == kernel["internal_bytes"]
    low, high = kernel["range_bytes"]
    exact = kernel["estimate_bytes"] - kernel["internal_bytes"]
    # The high end is the allowance's measured spread, or the body's register spill at most when that is more.
    spill = kernel["spill_bound_bytes"]
    assert spill > 0 and low == exact + allowance["low_bytes"]
    assert high == max(exact + allowance["high_bytes"], kernel["estimate_bytes"] + spill)
    assert low < kernel["estimate_bytes"] < high
    text = _run("vmem", "--tpu", "v6e", str(case)).stdout
    assert f"range {low / 2**20:.2f}-{high / 2**20:.2f} MiB" in text and "lower bound" not in text
    assert f"up to {spill / 2**20:.2f} MiB more if the register allocator spills" in text
