"""`hloscan hbm`, the HLO401/HLO402 checks and `hloscan explain` for E1000 messages."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from corpus import FIXTURES as FIXTURES_ROOT
from hloscan.analyses.hbm.explain import parse_hbm_oom
from hloscan.cli import main

FIXTURES = FIXTURES_ROOT / "hbm"
BIG = FIXTURES / "big.after_optimizations.txt"  # 16 GiB argument + 16 GiB temporary
KEYS = {"path", "module", "stage", "kind", "generation", "capacity_bytes", "arguments_bytes", "outputs_bytes",
        "aliased_bytes", "temporaries_bytes", "peak_bytes", "xla_total_bytes", "verdict", "live_at_peak"}
SHORT = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries (19.13G) "
         "exceeds available HBM (15.75G).")
LONG = """RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 32.00G of 15.75G hbm. Exceeded hbm capacity by 16.25G.

Total hbm usage >= 32.25G:
    reserved        258.00M
    program          16.00G
    arguments        16.00G

Output size 512B; shares 0B with arguments.

Program hbm requirement 16.00G:
    HLO temp         16.00G (100.0% utilization: Unpadded (16.00G) Padded (16.00G), 0.0% fragmentation (0B))

  Largest program allocations in hbm:

  1. Size: 16.00G
     Operator: op_name="jit(f)/exp"
     Shape: f32[4096,1048576]{1,0:T(8,128)}
     Unpadded size: 16.00G
     XLA label: %e = f32[4096,1048576]{1,0:T(8,128)} exponential(%p)
     Allocation type: HLO temp
"""


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_json_per_generation_verdicts():
    for tpu, verdict, code in (("v5e", "E1000", 1), ("v6e", "E1000", 1), ("v7x", "ok", 0)):
        result = _run("hbm", "--tpu", tpu, "--format", "json", str(BIG))
        [m] = json.loads(result.stdout)["modules"]
        assert KEYS <= set(m) and (m["verdict"], result.exit_code) == (verdict, code)
        assert m["arguments_bytes"] == 16 << 30 and m["temporaries_bytes"] == 16 << 30
        assert m["live_at_peak"][0] == {"instruction": "e", "shape": "f32[4096,1048576]{1,0:T(8,128)}",
                                        "bytes": 16 << 30, "op_name": "jit(f)/exp", "source": "train.py:3"}


def test_text_says_how_far_over_and_when_generation_is_assumed():
    out = _run("hbm", str(BIG)).output
    assert "v5e (assumed; use --tpu)" in out and "over capacity by 16.25G" in out and "-> E1000" in out


def test_bad_input_is_a_clean_error(tmp_path):
    bad = tmp_path / "x.after_optimizations.txt"
    bad.write_text("HloModule m\nENTRY %e {\n  %a = f32[ parameter(0)\n}\n")
    result = _run("hbm", "--format", "json", str(bad))
    assert result.exit_code == 2 and json.loads(result.stdout)["errors"][0]["line"] == 3


def test_check_reports_e1000_with_fix_hints():
    result = _run("check", "--format", "json", "--tpu", "v5e", str(BIG))
    findings = json.loads(result.stdout)["findings"]
    [f] = [f for f in findings if f["code"] == "HLO401"]
    assert f["xla_error"] == "E1000" and f["severity"] == "error" and f["instruction"] == "e"
    assert "batch" in f["hint"]
    quiet = json.loads(_run("check", "--format", "json", "--tpu", "v7x", str(BIG)).stdout)["findings"]
    assert not [f for f in quiet if f["code"].startswith("HLO40")]


def test_parse_both_message_forms():
    short = parse_hbm_oom(SHORT)
    assert (short.form, short.generations) == ("short", ["v5e"])
    assert short.over == int(19.13 * (1 << 30)) - int(15.75 * (1 << 30))
    long = parse_hbm_oom(LONG)
    assert long.form == "long" and long.over == int(16.25 * (1 << 30)) - 0 or long.required == 32 << 30
    [alloc] = long.allocations
    assert alloc.size == 16 << 30 and alloc.label == "e" and alloc.fields["allocation type"] == "HLO temp"
    assert parse_hbm_oom("Scoped allocation with size 24.47M and limit 16.00M exceeded") is None


def test_explain_maps_the_message_to_the_dump():
    result = _run("explain", LONG, "--dump", str(BIG), "--format", "json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["kind"] == "E1000"
    assert data["dump"]["allocations"] == [{"size": 16 << 30, "instruction": "e", "found": True, "line": 11}]
    assert data["dump"]["live_at_peak"][0]["source"] == "train.py:3"
    text = _run("explain", SHORT).output
    assert "over capacity by 3.38G" in text and "v5e" in text


def test_bare_code_names_the_predicting_rule():
    assert "HLO401" in _run("explain", "E1000").output


def test_graph_draws_the_peak_instruction_of_the_finding(tmp_path):
    out = tmp_path / "g.dot"
    result = _run("graph", "--finding", "1", str(BIG), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert 'id="main/e"' in text and 'label="HLO401 here' in text
