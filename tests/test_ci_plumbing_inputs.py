"""Issue 11 items 6, 7, 12: no silent passes. A selection that selects no check, or inputs holding no HLO
module, are errors; skipped files are counted and said; each file is scanned once; options may come
before the paths; `-` is standard input; bad config/baseline encodings are clear errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscan.cli import main
from hloscan.hlo.loader import SKIP_DANGLING, SKIP_DUPLICATE, SKIP_NO_HLO_TEXT, discover
from hloscan.lint.scan import default_jobs, scan_tasks, Task

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "offload_output.hlo.txt"
HEADERLESS = """// RUN: some_tool %s | FileCheck %s

fused_computation {
  p0 = f32[8] parameter(0)
  ROOT n = f32[8] negate(p0)
}
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


def run(*args: str, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


# ---------------------------------------------------------------------- item 6: selections


@pytest.mark.parametrize("selector", ["HLO001", "HLO0", "HLO9", "HLO900", "syntax-error"])
def test_select_matching_no_check_is_exit_2(workdir, selector):
    result = run("check", "--select", selector, str(DEMO))
    assert result.exit_code == 2, result.output
    assert "matches no check" in result.output


def test_select_matching_no_check_in_config_is_exit_2(workdir):
    (workdir / "hloscan.toml").write_text('select = ["HLO001"]\n')
    result = run("check", str(DEMO))
    assert result.exit_code == 2
    assert "hloscan.toml" in result.output and "matches no check" in result.output


def test_real_selection_still_runs(workdir):
    assert run("check", "--select", "HLO1", str(DEMO)).exit_code == 1


# ---------------------------------------------------------------------- item 7: nothing analysed, skipped files


def test_empty_folder_is_exit_2(workdir):
    (workdir / "empty").mkdir()
    result = run("check", "empty")
    assert result.exit_code == 2
    assert "nothing analysed" in result.output


def test_folder_without_modules_is_exit_2_and_says_what_was_skipped(workdir):
    folder = workdir / "dump"
    folder.mkdir()
    (folder / "notes.md").write_text("hello")
    (folder / "module_0001.buffer-assignment.txt").write_text("BufferAssignment:\n")
    for fmt in ("text", "json", "sarif"):
        result = run("check", "--format", fmt, "dump")
        assert result.exit_code == 2, fmt
    doc = json.loads(run("check", "--format", "json", "dump").stdout)
    assert {s["path"] for s in doc["skipped"]} == {"dump/notes.md", "dump/module_0001.buffer-assignment.txt"}
    assert doc["summary"]["complete"] is False and doc["summary"]["files_skipped"] == 2
    sarif = json.loads(run("check", "--format", "sarif", "dump").stdout)
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert len(invocation["properties"]["skipped"]) == 2


def test_parse_of_nothing_is_exit_2(workdir):
    (workdir / "empty").mkdir()
    assert run("parse", "empty").exit_code == 2


def test_headerless_hlo_files_are_parsed_in_folders(workdir):
    folder = workdir / "tests"
    folder.mkdir()
    (folder / "bare.hlo").write_text(HEADERLESS)
    (folder / "proto.hlo").write_text('hlo_module {\n  name: "foo"\n}\n')  # HloProto text: not HLO text
    found = dict(discover([folder]))
    assert found[str(folder / "bare.hlo")] is None
    assert found[str(folder / "proto.hlo")] == SKIP_NO_HLO_TEXT
    result = run("check", "tests")
    assert result.exit_code == 0, result.output
    assert "1 file(s), 1 module(s)" in result.output and "1 skipped" in result.output


def test_headerless_hlo_after_long_comments(workdir):
    folder = workdir / "tests"
    folder.mkdir()
    (folder / "long.hlo").write_text("// CHECK: " + "x" * 100 + "\n" * 1 + ("// CHECK-NEXT: y\n" * 5000) + HEADERLESS)
    assert dict(discover([folder]))[str(folder / "long.hlo")] is None


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_dangling_symlinks_and_unreadable_folders_are_reported(workdir):
    folder = workdir / "dump"
    folder.mkdir()
    shutil.copy(DEMO, folder / "a.hlo.txt")
    (folder / "gone.hlo").symlink_to(workdir / "missing.hlo")
    found = dict(discover([folder]))
    assert found[str(folder / "gone.hlo")] == SKIP_DANGLING
    result = run("check", "dump")
    assert result.exit_code == 1
    assert "1 skipped: 1 dangling symlink" in result.output


def test_same_file_twice_or_through_a_symlink_is_scanned_once(workdir):
    shutil.copy(DEMO, workdir / "a.hlo.txt")
    (workdir / "link.hlo.txt").symlink_to(workdir / "a.hlo.txt")
    found = discover(["a.hlo.txt", "./a.hlo.txt", "link.hlo.txt"])
    assert [reason for _, reason in found] == [None, SKIP_DUPLICATE, SKIP_DUPLICATE]
    doc = json.loads(run("check", "--format", "json", "a.hlo.txt", "a.hlo.txt", "link.hlo.txt").stdout)
    assert len(doc["files"]) == 1 and len(doc["findings"]) == 1


# ---------------------------------------------------------------------- item 12 and expected by users


@pytest.mark.parametrize("args", [["--tpu", "v6e"], ["-j", "2"], ["--format", "json"], ["-q"]])
def test_options_before_the_path_go_to_check(workdir, args):
    result = run(*args, str(DEMO))
    assert result.exit_code == 1, result.output
    assert "No such option" not in result.output


def test_stdin_for_check_and_parse(workdir):
    text = DEMO.read_text()
    result = run("check", "-", input=text)
    assert result.exit_code == 1 and "-:15:3: [1] HLO101" in result.output
    result = run("-", input=text)
    assert result.exit_code == 1
    result = run("parse", "-", input=text)
    assert result.exit_code == 0 and "module" in result.output


def test_non_utf8_config_is_a_clear_error(workdir):
    (workdir / "bad.toml").write_bytes(b'select = ["HLO1"]\n# caf\xe9\n')
    result = run("check", "--config", "bad.toml", str(DEMO))
    assert result.exit_code == 2
    assert "not UTF-8" in result.output
    assert isinstance(result.exception, SystemExit)


def test_non_utf8_baseline_is_a_clear_error(workdir):
    (workdir / "b.json").write_bytes(b'{"version": 1, "findings": [], "x": "\xff"}')
    result = run("check", "--baseline", "b.json", str(DEMO))
    assert result.exit_code == 2
    assert "not UTF-8" in result.output
    assert isinstance(result.exception, SystemExit)


def test_write_baseline_says_why_it_exits_2(workdir):
    (workdir / "bad.hlo").write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[] nonsense(\n}\n")
    result = run("check", "--write-baseline", "b.json", "bad.hlo")
    assert result.exit_code == 2
    assert "bad.hlo:" in result.output and "HLO001" in result.output
    assert "could not be parsed" in result.output


def test_jobs_capped_at_cores_and_files(workdir, monkeypatch):
    import hloscan.lint.scan as scan_module

    started = []

    class Pool:
        def __init__(self, max_workers, **kwargs):
            started.append(max_workers)
            raise RuntimeError("stop here")

    monkeypatch.setattr(scan_module, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_BYTES", 0)
    tasks = [Task(str(DEMO), ()), Task(str(DEMO) + "x", ())]
    with pytest.raises(RuntimeError):
        scan_tasks(tasks, jobs=100)
    assert started == [min(2, default_jobs())]


def test_color_and_no_color(workdir, monkeypatch):
    assert "\033[" in run("check", "--color", "always", str(DEMO)).output
    assert "\033[" not in run("check", "--color", "never", str(DEMO)).output
    monkeypatch.setenv("NO_COLOR", "1")
    from hloscan.cli.main import use_colour

    class Tty:
        def isatty(self):
            return True

    assert use_colour("auto", Tty(), to_file=False) is False
    monkeypatch.delenv("NO_COLOR")
    assert use_colour("auto", Tty(), to_file=False) is True


def test_quiet_prints_findings_only(workdir):
    result = run("check", "-q", str(DEMO))
    assert result.exit_code == 1
    assert "HLO101" in result.output and "file(s)" not in result.output and "For details" not in result.output


def test_show_config_and_using_config(workdir):
    (workdir / "hloscan.toml").write_text('select = ["HLO2"]\ntpu = "v6e"\n')
    result = run("check", "--show-config")
    assert result.exit_code == 0
    assert "hloscan.toml" in result.output and "select: HLO2" in result.output and "tpu: v6e" in result.output
    result = run("check", str(DEMO))
    assert "using config" in result.stderr and "hloscan.toml" in result.stderr


def test_json_and_sarif_carry_summary_version_and_timing(workdir):
    doc = json.loads(run("check", "--format", "json", str(DEMO)).stdout)
    assert list(doc)[:3] == ["version", "files", "findings"]  # the original keys stay first and unchanged
    assert doc["summary"]["errors"] == 1 and doc["summary"]["modules"] == 1
    assert doc["hloscan_version"] and doc["timing"]["seconds"] >= 0
    sarif = json.loads(run("check", "--format", "sarif", str(DEMO)).stdout)
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["startTimeUtc"].endswith("Z") and invocation["endTimeUtc"] >= invocation["startTimeUtc"]
    assert invocation["properties"]["summary"]["findings"] == 1


# ---------------------------------------------------------------------- item 5: README and `explain` agree


def test_explain_e0102_names_hlo301_as_related(workdir):
    result = run("explain", "E0102")
    assert result.exit_code == 0
    assert "Related rules" in result.output and "HLO301" in result.output
    assert "HLO301" not in run("explain", "E1200").output
