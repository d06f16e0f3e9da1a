"""`hloscan confirm`, `check --confirm` and `vmem --exact` with the real TPU compiler (the tpu extra, which
`make venv` installs): a handful of small recorded tpu-oracle/real cases, each compile a few seconds.

The recorded verdicts and figures come from the corpus MANIFEST, written by another compile of the same
programs; these tests compile the before_optimizations text again and must agree with them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import FIXTURES, corpus_dir, manifest

REAL = "tpu-oracle/real"
HLOSCAN = [sys.executable, "-m", "hloscan"]


def _row(case: str) -> dict[str, str]:
    return next(r for r in manifest(REAL) if r["case"] == case)


def _before(case: str) -> str:
    return str(corpus_dir(REAL) / case / "before_optimizations.txt")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*HLOSCAN, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def confirm_json(*args: str) -> tuple[int, dict]:
    done = run("confirm", "--format", "json", *args)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_an_accepted_kernel_and_its_exact_figure():
    case = "v5e__pallas__matmul_256x1024_k1024"
    code, doc = confirm_json(_before(case), "--tpu", "v5e")
    assert code == 0
    [m] = doc["confirm"]
    assert m["verdict"] == "ok" and m["versions"]["libtpu"] and m["topology"] == "v5e:2x2"
    recorded = json.loads(_row(case)["scoped_per_instr"])
    [kernel] = m["kernels"]
    assert {kernel["compiled_names"][0]: kernel["compiler_bytes"]} == recorded
    assert kernel["static_bytes"] > 0 and kernel["static_error"] is not None


def test_e1001_static_finding_confirmed():
    case = "v5e__pallas__matmul_2048x1024_k4096"
    code, doc = confirm_json(_before(case), "--tpu", "v5e")
    assert code == 1
    [m] = doc["confirm"]
    assert m["verdict"].startswith("E1001")
    hlo201 = [f for f in doc["findings"] if f["code"] == "HLO201"]
    assert hlo201 and hlo201[0]["data"]["tpu_compiler"]["status"] == "confirmed"
    assert "confirmed by the TPU compiler, libtpu" in hlo201[0]["message"]
    assert hlo201[0]["source"] is not None and hlo201[0]["hint"]


def test_whole_vmem_capacity_on_v5p_as_recorded():
    case = "v5p__pallas__matmul_2048x1024_k4096"
    code, doc = confirm_json(_before(case), "--tpu", "v5p")
    assert code == 1 and _row(case)["error_kind"] == "vmem_capacity_oom"
    assert doc["confirm"][0]["verdict"] == "vmem_capacity_oom"
    assert any(f["code"] == "HLO205" and f["data"].get("tpu_compiler") for f in doc["findings"])


def test_e1200_text_and_sarif():
    case = "v7x__programs__edit_vjp_residuals_kind_removed"
    text = run("confirm", _before(case), "--tpu", "v7x")
    assert text.returncode == 1, text.stderr
    assert "TPU compiler verdict E1200" in text.stdout and "HLO101" in text.stdout
    sarif = run("confirm", "--format", "sarif", _before(case), "--tpu", "v7x")
    log = json.loads(sarif.stdout)
    results = log["runs"][0]["results"]
    assert any(r["ruleId"] == "HLO101" and r["properties"]["data"]["tpu_compiler"]["status"] in ("confirmed", "missed")
               for r in results)
    assert log["runs"][0]["properties"]["tpuCompiler"][0]["verdict"].startswith("E1200")


def test_e2002_misaligned_block_confirmed_by_the_compiler():
    """fixtures/confirm/misaligned: a (4, 128) block of an f32[64, 256] (make_dumps.py skips jax's own block
    check to let the compiler see it). The compiler says E2002; hloscan's HLO203 findings are confirmed."""
    code, doc = confirm_json(str(FIXTURES / "confirm" / "misaligned"), "--tpu", "v5e")
    assert code == 1
    [m] = doc["confirm"]
    assert m["verdict"] == "E2002 (mosaic_misaligned_block)" and m["path"].endswith("before_optimizations.txt")
    assert "block shape (..., 4, 128) is not divisible by tiling" in m["compiler_error"]
    hlo203 = [f for f in doc["findings"] if f["code"] == "HLO203"]
    assert hlo203 and all(f["data"]["tpu_compiler"]["status"] == "confirmed" for f in hlo203)
    assert not [f for f in doc["findings"] if f["data"].get("tpu_compiler", {}).get("status") == "missed"]


def test_host_memory_outputs_are_put_back_after_conversion():
    """The HLO->MLIR conversion drops S(5): without re-attaching pinned_host this program fails E1200."""
    case = "v6e__programs__decode_kvcache_host"
    code, doc = confirm_json(_before(case), "--tpu", "v6e")
    assert code == 0 and doc["confirm"][0]["verdict"] == "ok"
    recorded = json.loads(_row(case)["mem_report_totals"])
    assert doc["confirm"][0]["mem_report_totals"]["default (color=0)"] == recorded["default (color=0)"]
    assert doc["confirm"][0]["hbm"]["report_total"] == recorded["default (color=0)"]


def test_hbm_out_of_memory_as_the_hlo401_finding():
    case = "v5e__hbm__decode_B8_smax134144_x1.6"
    code, doc = confirm_json(_before(case), "--tpu", "v5e")
    assert code == 1
    assert doc["confirm"][0]["verdict"] == "E1000 (hbm_temporaries_oom)"
    hlo401 = [f for f in doc["findings"] if f["code"] == "HLO401"]
    assert hlo401 and hlo401[0]["data"]["tpu_compiler"]["status"] in ("confirmed", "missed")


@pytest.mark.parametrize("fixture, args, chosen, compiled, devices, kind, argument_bytes", [
    # From num_partitions: 4 -> the generation's 2x2 slice, 8 -> v5e:2x4. One device's shard: a quarter of
    # sharded_add's 4 MiB parameter; an eighth of sharded_dot8's x (2 MiB) plus its replicated w (512 KiB).
    ("sharded_add.hlo", ["--tpu", "v5e"], "v5e:2x2", "v5e:2x2", 4, "TPU v5 lite", 1 << 20),
    ("sharded_dot8.hlo", ["--tpu", "v5e"], "v5e:2x4", "v5e:2x4", 8, "TPU v5 lite", (256 + 512) << 10),
    # Given with --topology: v7x spelled as libtpu wants it (tpu7x), 4 of its devices used.
    ("sharded_add.hlo", ["--topology", "v7x:2x2x1"], "v7x:2x2x1", "tpu7x:2x2x1", 4, "TPU7x", 1 << 20),
    ("sharded_dot8.hlo", ["--topology", "v6e:2x4"], "v6e:2x4", "v6e:2x4", 8, "TPU v6 lite", (256 + 512) << 10),
])
def test_sharded_module_compiled_on_as_many_devices_as_partitions(fixture, args, chosen, compiled, devices, kind,
                                                                   argument_bytes):
    code, doc = confirm_json(str(FIXTURES / "confirm" / fixture), *args)
    assert code == 0
    [m] = doc["confirm"]
    assert m["verdict"] == "ok" and m["topology"] == chosen and m["compiled_topology"] == compiled
    assert m["device_count"] == devices and m["device_kind"] == kind
    assert m["memory_analysis"]["argument_size_in_bytes"] == argument_bytes


def test_a_topology_smaller_than_the_module_is_one_result_and_exit_2():
    done = run("confirm", str(FIXTURES / "confirm" / "sharded_dot8.hlo"), str(FIXTURES / "confirm" / "sharded_add.hlo"),
               "--topology", "v5e:2x2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the module has 8 partitions but topology v5e:2x2 has 4 devices" in done.stderr
    assert "module sharded_add for v5e:2x2 (4 x TPU v5 lite" in done.stdout


def test_check_confirm_and_vmem_exact():
    case = "v5e__pallas__matmul_256x1024_k1024"
    checked = run("check", "--confirm", _before(case), "--tpu", "v5e")
    assert checked.returncode == 0 and "TPU compiler verdict ok" in checked.stdout
    exact = run("vmem", "--exact", "--format", "json", _before(case), "--tpu", "v5e")
    assert exact.returncode == 0, exact.stderr
    [kernel] = json.loads(exact.stdout)["kernels"]
    recorded = json.loads(_row(case)["scoped_per_instr"])
    # This kernel's operands stay in HBM in the whole program too (the after_codegen beside it says so): alone
    # it gets the same figure.
    assert kernel["exact"]["scoped_bytes"] == list(recorded.values())[0]
    assert kernel["exact"]["placement_source"] == "after_codegen.txt"
    assert kernel["exact"]["placement_differences"] == []
    assert kernel["exact"]["placed_bytes"] == list(recorded.values())[0]


def test_vmem_exact_says_why_alone_differs_and_moves_the_figure_to_the_whole_programs_placement():
    """flash_attention's backward kernels on v6e: alone 1.4-3.4x the whole-program figure, because the whole
    program kept their operands or results in VMEM; moved to that placement, each is the recorded figure.
    From the after_optimizations dump (tiled, S(1) layouts) the minimal modules compile to the same figures."""
    case = "v6e__pallas__flash_bwd_q128_km256_k128"
    recorded = sorted(json.loads(_row(case)["scoped_per_instr"]).values())
    done = run("vmem", "--exact", "--format", "json", _before(case), "--tpu", "v6e")
    assert done.returncode == 0, done.stderr
    exact = [k["exact"] for k in json.loads(done.stdout)["kernels"]]
    assert sorted(e["placed_bytes"] for e in exact) == recorded
    assert all(e["scoped_bytes"] > e["placed_bytes"] and e["placement_differences"] for e in exact)
    text = run("vmem", "--exact", _before(case), "--tpu", "v6e").stdout
    assert "results 0, 1, 2 were in VMEM (S(1)) in the whole program, in HBM alone" in text
    assert "with the whole program's placement: 987,136 B" in text
    after = run("vmem", "--exact", "--format", "json", str(corpus_dir(REAL) / case / "after_optimizations.txt"),
                "--tpu", "v6e")
    assert after.returncode == 0, after.stderr
    from_after = [k["exact"] for k in json.loads(after.stdout)["kernels"]]
    assert sorted(e["scoped_bytes"] for e in from_after) == sorted(e["scoped_bytes"] for e in exact)
    assert sorted(e["placed_bytes"] for e in from_after) == recorded


def test_an_input_that_cannot_be_compiled_costs_only_its_result(tmp_path):
    """XLA rejects what hloscan's parser accepts here (operand shapes that do not match): exit 2 for it, the
    good input still compiled and reported."""
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule bad\n\nENTRY %main (p: f32[8]) -> f32[4] {\n  %p = f32[8]{0} parameter(0)\n"
                   "  ROOT %a = f32[4]{0} add(f32[8]{0} %p, f32[8]{0} %p)\n}\n")
    code, doc = confirm_json(str(bad), str(FIXTURES / "confirm" / "sharded_add.hlo"), "--tpu", "v5e")
    by_module = {m["module"]: m for m in doc["confirm"]}
    assert by_module["sharded_add"]["verdict"] == "ok"
    assert by_module["bad"]["status"] in ("convert_error", "compile_error")
    assert code in (1, 2) and (code == 2) == (by_module["bad"]["status"] == "convert_error")


def test_a_crashing_compiler_costs_one_result(tmp_path):
    """A worker that dies (as libtpu can) is that module's 'no verdict', exit 2, the others still reported."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nkill -SEGV $$\n")
    fake.chmod(0o755)
    done = run("confirm", _before("v5e__pallas__matmul_256x1024_k1024"),
               str(FIXTURES / "confirm" / "sharded_add.hlo"), "--tpu", "v5e", "--python", str(fake))
    assert done.returncode == 2
    assert done.stderr.count("no verdict from the TPU compiler (crashed)") == 2
    assert "Traceback" not in done.stderr


def test_timeout_is_one_result_and_exit_2():
    done = run("confirm", str(FIXTURES / "confirm" / "sharded_add.hlo"), "--tpu", "v5e", "--timeout", "1")
    assert done.returncode == 2 and "(timeout)" in done.stderr and "Traceback" not in done.stderr


def test_missing_extra_is_a_message_and_exit_2(tmp_path):
    plain = tmp_path / "python"
    plain.write_text("#!/bin/sh\nexit 3\n")  # a python that has no jax: the probe fails
    plain.chmod(0o755)
    done = run("confirm", str(FIXTURES / "confirm" / "sharded_add.hlo"), "--tpu", "v5e",
               env={"HLOSCAN_TPU_PYTHON": str(plain)})
    assert done.returncode == 2
    assert "pip install 'hloscan[tpu]'" in done.stderr and "Traceback" not in done.stderr
    usage = run("confirm", str(FIXTURES / "confirm" / "sharded_add.hlo"))
    assert usage.returncode == 2 and "--tpu" in usage.stderr


def test_api_on_a_jax_lowered_object():
    code = ("import os; os.environ['JAX_PLATFORMS'] = 'cpu'\n"
            "import jax, jax.numpy as jnp, hloscan\n"
            "lowered = jax.jit(lambda x: x * 2 + 1).lower(jnp.ones((256, 256), jnp.float32))\n"
            "[m] = hloscan.confirm_tpu(lowered, tpu='v6e')\n"
            "print(m.verdict.label, m.topology, m.result.memory_analysis['argument_size_in_bytes'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "v6e:2x2", str(256 * 256 * 4)]


def test_unsupported_jax_version_is_refused():
    from hloscan.confirm.runner import WORKER
    import importlib.util

    spec = importlib.util.spec_from_file_location("confirm_worker", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker.unsupported({"jax": "0.4.30", "jaxlib": "0.4.30", "libtpu": "0.0.1"}).startswith("jax 0.4.30 is")
    assert worker.unsupported({"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": ""})
    assert worker.unsupported(worker.versions()) is None  # the extra `make venv` installed is supported


def test_readme_workflow_on_a_dump_folder_of_our_own():
    """The README's two commands on an --xla_dump_to folder made by fixtures/confirm/make_dumps.py: static
    `check` (pre-submit) finds the E1001 kernel; `confirm` (nightly) compiles each module's
    before_optimizations file and confirms it, and the other kernel's exact figure is its after_codegen's."""
    dumps = FIXTURES / "confirm" / "dumps"
    static = run("check", str(dumps), "--tpu", "v5e", "--format", "json")
    assert static.returncode == 1
    assert [f["code"] for f in json.loads(static.stdout)["findings"]] == ["HLO201"]
    code, doc = confirm_json(str(dumps), "--tpu", "v5e")
    assert code == 1
    by_case = {Path(m["path"]).parent.name: m for m in doc["confirm"]}
    assert set(by_case) == {"matmul_fits", "matmul_e1001"}
    assert all(m["path"].endswith("before_optimizations.txt") for m in doc["confirm"])
    assert by_case["matmul_fits"]["verdict"] == "ok" and by_case["matmul_e1001"]["verdict"].startswith("E1001")
    [hlo201] = [f for f in doc["findings"] if f["code"] == "HLO201"]
    assert hlo201["data"]["tpu_compiler"]["status"] == "confirmed"
    codegen = next((dumps / "matmul_fits").glob("*after_codegen.txt")).read_text()
    [kernel] = by_case["matmul_fits"]["kernels"]
    assert f'"size":"{kernel["compiler_bytes"]}"' in codegen
