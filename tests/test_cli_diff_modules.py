"""`hloscan diff A_DIR B_DIR` on real --xla_dump_to folders matches modules by name and stage, names the
unmatched ones; `--module NAME` on diff, signature and memory (issue 11, item 9). Before: the first module
of each folder (a helper jit such as jit_iota) was compared and the program itself never was."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hloscan.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"  # jax CPU dumps, see make_dumps.py
OLD, NEW = str(DUMPS / "old"), str(DUMPS / "new")


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_folders_match_modules_by_name_and_stage():
    result = _run("diff", "--format", "json", OLD, NEW)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    pairs = [(m["module"], m["stage"], Path(m["old_file"]).name, Path(m["new_file"]).name) for m in doc["modules"]]
    names = [p[0] for p in pairs]
    assert names.count("jit_convert_element_type") == 2 and "jit_train_step" in names
    assert all(stage == "after_optimizations" for _, stage, _, _ in pairs)  # the most optimised common stage
    assert all(a.split(".", 1)[1] == b.split(".", 1)[1] for _, _, a, b in pairs)  # same module name, same stage
    # The second jit_convert_element_type is module_0006 in OLD and module_0008 in NEW (NEW ran jit_add first).
    converts = [(a, b) for n, _, a, b in pairs if n == "jit_convert_element_type"]
    assert [a[:11] for a, _ in converts] == ["module_0002", "module_0006"]
    assert [b[:11] for _, b in converts] == ["module_0002", "module_0008"]
    assert [m["module"] for m in doc["only_in_new"]] == ["jit_add"] and doc["only_in_old"] == []
    step = next(m for m in doc["modules"] if m["module"] == "jit_train_step")
    assert [(c["old_bytes"], c["new_bytes"]) for c in step["e0102_risks"]] == [(2560, 3072), (1280, 1536)]


def test_text_names_each_pair_and_the_unmatched():
    result = _run("diff", OLD, NEW)
    assert result.exit_code == 1
    assert "== jit_train_step (after_optimizations): " in result.stdout
    assert "only in NEW (" in result.stdout and "jit_add (after_optimizations" in result.stdout


def test_module_option_picks_the_program():
    result = _run("diff", "--module", "jit_train_step", "--format", "json", OLD, NEW)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    (only,) = doc["modules"]
    assert only["module"] == "jit_train_step" and only["stage"] == "after_optimizations"
    assert doc["e0102_risks"] == only["e0102_risks"]  # one pair: its diff also at the top level, as before
    before = _run("diff", "--module", "jit_train*", "--stage", "before_optimizations", OLD, NEW)
    assert "(before_optimizations)" in before.stdout and before.exit_code == 1
    missing = _run("diff", "--module", "jit_nope", OLD, NEW)
    assert missing.exit_code == 2 and "no module named 'jit_nope'" in missing.stderr
    assert "jit_train_step" in missing.stderr  # the names there are


def test_signature_and_memory_module_option():
    sig = json.loads(_run("signature", "--module", "jit_train_step", "--format", "json", OLD).stdout)
    assert {s["module"] for s in sig} == {"jit_train_step"} and len(sig) == 2  # both stages
    mem = json.loads(_run("memory", "--module", "jit_train_step", "--format", "json", OLD).stdout)
    assert len(mem) == 2
    everything = json.loads(_run("signature", "--format", "json", OLD).stdout)
    assert len(everything) == 12
    assert _run("memory", "--module", "nope", OLD).exit_code == 2


def test_two_files_are_compared_whatever_their_names():
    a = str(DUMPS / "old" / "module_0002.jit_convert_element_type.cpu_after_optimizations.txt")
    b = str(DUMPS / "new" / "module_0006.jit_add.cpu_after_optimizations.txt")
    result = _run("diff", a, b)
    assert result.exit_code in (0, 1) and "signature diff jit_convert_element_type -> jit_add" in result.stdout
    assert "==" not in result.stdout  # the two files given: no pair heading
