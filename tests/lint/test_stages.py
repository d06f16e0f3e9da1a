"""Dump folders: files grouped by stage, each check run once on its stage, parallel scans equal serial ones."""

from __future__ import annotations

import os
import time
from pathlib import Path

import _lint_check
from hloscan.lint.engine import Selection, selected_checks
from hloscan.lint.registry import Check
from hloscan.lint.scan import build_tasks, scan_tasks
from hloscan.lint.stages import group_files, plan, stage_of
from corpus import CORPUS, require_path as _need



def _fake(stage: str) -> type[Check]:
    return type(f"Fake_{stage}", (), {"code": f"X_{stage}", "stage": stage})  # only what plan() reads


def test_stage_names():
    assert stage_of("d/module_0001.jit_f.before_optimizations.txt") == "before_optimizations"
    assert stage_of("d/module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt") == "after_optimizations"
    assert stage_of("case/after_codegen.txt") == "after_codegen"
    assert stage_of("d/module_0001.jit_f.after_optimizations-buffer-assignment.txt") is None
    assert stage_of("model.hlo.txt") is None


def test_grouping_and_plan():
    files = ["d/module_0001.jit_f.before_optimizations.txt", "d/module_0001.jit_f.after_optimizations.txt",
             "d/module_0002.jit_g.before_optimizations.txt", "case/input.hlo", "case/after_optimizations.txt",
             "case/before_optimizations.txt", "lone.hlo.txt", "other/input.hlo"]
    groups = {g.key: g.files for g in group_files(files)}
    assert groups["d/module_0001"] == {"before_optimizations": files[0], "after_optimizations": files[1]}
    assert groups["case"] == {"input": files[3], "after_optimizations": files[4], "before_optimizations": files[5]}
    assert groups["lone.hlo.txt"] == {None: "lone.hlo.txt"}
    assert groups["other/input.hlo"] == {None: "other/input.hlo"}  # no stage files beside it: a plain file

    before, codegen, anyc = _fake("before_optimizations"), _fake("after_codegen"), _fake("any")
    planned = {p: {c.code for c in cs} for p, cs in plan(files, [before, codegen, anyc]).items()}
    assert planned["d/module_0001.jit_f.before_optimizations.txt"] == {"X_before_optimizations"}
    # No after_codegen file: the Vmem-style check falls back to the most optimised text, like "any".
    assert planned["d/module_0001.jit_f.after_optimizations.txt"] == {"X_after_codegen", "X_any"}
    assert planned["d/module_0002.jit_g.before_optimizations.txt"] == {"X_before_optimizations", "X_after_codegen", "X_any"}
    assert planned["case/input.hlo"] == set()  # before_optimizations is there, so the input text is not re-checked
    assert planned["lone.hlo.txt"] == planned["other/input.hlo"] == {"X_before_optimizations", "X_after_codegen", "X_any"}


def test_each_finding_reported_once_per_module(tmp_path):
    """The same module dumped at three stages yields one finding, from the stage the check declares."""
    for stage in ("before_optimizations", "after_optimizations", "after_codegen"):
        (tmp_path / f"module_0007.jit_f.{stage}.txt").write_text(_lint_check.module_text("FLAG"), encoding="utf-8")
    with _lint_check.registered() as check:
        result = scan_tasks(build_tasks([str(tmp_path)], [check]))
    assert [Path(f.span.path).name for f in result.findings] == ["module_0007.jit_f.before_optimizations.txt"]
    assert len(result.files) == 3


def test_tpu_oracle_parallel_equals_serial():
    corpus = _need(CORPUS / "tpu-oracle")
    checks = selected_checks(Selection())
    tasks = build_tasks([str(corpus)], checks)
    jobs = max(2, len(os.sched_getaffinity(0)))

    t0 = time.perf_counter()
    serial = scan_tasks(tasks, {"_global": {}}, jobs=1)
    t1 = time.perf_counter()
    parallel = scan_tasks(tasks, {"_global": {}}, jobs=jobs)
    t2 = time.perf_counter()

    print(f"\ntpu-oracle: {len(tasks)} files, {len(checks)} checks, {len(serial.findings)} findings; "
          f"single-process {t1 - t0:.2f} s, {jobs} processes {t2 - t1:.2f} s")
    assert serial.findings == parallel.findings
    assert [f.to_dict() for f in serial.findings] == [f.to_dict() for f in parallel.findings]  # incl. data
    assert [(f.path, f.ok) for f in serial.files] == [(f.path, f.ok) for f in parallel.files]
    assert all(f.ok for f in serial.files)
    # Once per module: no finding repeats from a second stage file of the same case folder.
    stages_seen: dict[tuple, set[str]] = {}
    for f in serial.findings:
        key = (str(Path(f.span.path).parent), f.code, f.module, f.computation, f.instruction, f.message)
        stages_seen.setdefault(key, set()).add(Path(f.span.path).name)
    assert all(len(names) == 1 for names in stages_seen.values())
