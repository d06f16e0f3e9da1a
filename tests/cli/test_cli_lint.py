"""The pre-submit lint surface: exit codes, selectors, config, baseline, GitHub annotations, rules/rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import _lint_check
from hloscan.cli import main
from hloscan.reporters.github import escape_data, escape_property


@pytest.fixture
def marked():
    with _lint_check.registered() as check:
        yield check


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty folder as the working directory, so no config is found above it by accident."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, ["check", "--jobs", "1", *args])


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------- exit codes


def test_exit_codes(marked, workdir):
    clean = write(workdir, "clean.hlo.txt", _lint_check.module_text("fine"))
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    broken = write(workdir, "broken.hlo.txt", "HloModule m\n\nENTRY main {\n  p = f32[8 parameter(0)\n}\n")
    assert run(str(clean)).exit_code == 0
    assert run(str(dirty)).exit_code == 1
    assert run("--exit-zero", str(dirty)).exit_code == 0
    assert run("--fail-on", "error", str(dirty)).exit_code == 0
    res = run(str(broken))
    assert res.exit_code == 2, res.output
    assert "HLO001" in res.output
    assert run("--exit-zero", str(broken)).exit_code == 2


def test_select_ignore_prefixes_and_names(marked, workdir):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    for flags, code in [(["--select", "HLO0"], 1), (["--select", "hlo09"], 1), (["--select", "marked-instruction"], 1),
                        (["--ignore", "HLO0"], 0), (["--ignore", "marked-instruction"], 0),
                        (["--select", "HLO098", "--ignore", "HLO09"], 0)]:
        assert run(*flags, str(dirty)).exit_code == code, flags


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_unknown_selector_is_usage_error(marked, workdir, flag):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    res = run(flag, "HLO098,HLO7", str(dirty))
    assert res.exit_code == 2
    assert "'HLO7'" in res.output and flag in res.output


# ---------------------------------------------------------------------- config


def test_config_pyproject_is_found_upwards(marked, workdir, monkeypatch):
    write(workdir, "pyproject.toml", '[project]\nname = "x"\n\n[tool.hloscan]\nignore = ["marked-instruction"]\n')
    sub = workdir / "a" / "b"
    dirty = write(sub, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    monkeypatch.chdir(sub)
    assert run(str(dirty)).exit_code == 0
    assert run("--no-config", str(dirty)).exit_code == 1
    assert run("--ignore", "HLO1,HLO2", str(dirty)).exit_code == 1  # the flag replaces the config's ignore


def test_config_options_severity_fail_on(marked, workdir):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    write(workdir, "hloscan.toml", '[checks.marked-instruction]\nmarker = "nothing"\n')
    assert run(str(dirty)).exit_code == 0
    write(workdir, "hloscan.toml", 'fail-on = "error"\n[severity]\nHLO098 = "note"\n')
    res = run("--format", "json", str(dirty))
    assert res.exit_code == 0
    assert json.loads(res.output)["findings"][0]["severity"] == "note"
    assert run("--fail-on", "note", str(dirty)).exit_code == 1  # the flag beats the config


def test_per_path_ignores(marked, workdir):
    write(workdir, "hloscan.toml", '[per-path-ignores]\n"legacy/*" = ["HLO0"]\n')
    old = write(workdir, "legacy/deep/old.hlo.txt", _lint_check.module_text("FLAG"))
    new = write(workdir, "new/new.hlo.txt", _lint_check.module_text("FLAG"))
    assert run(str(old)).exit_code == 0
    assert run(str(new)).exit_code == 1


@pytest.mark.parametrize("toml, key", [
    ('selct = ["HLO0"]\n', "selct"),
    ('select = ["HLO7"]\n', "select"),
    ('fail-on = "fatal"\n', "fail-on"),
    ('tpu = "v9"\n', "tpu"),
    ('vmem_limit_kib = "lots"\n', "vmem_limit_kib"),
    ('[severity]\nno-such-check = "note"\n', "severity.no-such-check"),
    ('[checks.marked-instruction]\nmarker = 3\n', "checks.marked-instruction.marker"),
    ('[checks.marked-instruction]\nmarkr = "x"\n', "checks.marked-instruction.markr"),
    ('[checks.nope]\nx = 1\n', "checks.nope"),
    ('[per-path-ignores]\n"a/*" = ["HLO7"]\n', "per-path-ignores"),
    ('select = [\n', "invalid TOML"),
])
def test_config_errors_name_the_key(marked, workdir, toml, key):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    write(workdir, "hloscan.toml", toml)
    res = run(str(dirty))
    assert res.exit_code == 2
    assert key in res.output, res.output
    assert "hloscan.toml" in res.output


def test_explicit_config_file(marked, workdir):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    cfg = write(workdir, "ci/lint.toml", 'ignore = ["HLO098"]\n')
    assert run("--config", str(cfg), str(dirty)).exit_code == 0
    pyproject = write(workdir, "ci/pyproject.toml", "[tool.hloscan]\nbogus = 1\n")
    res = run("--config", str(pyproject), str(dirty))
    assert res.exit_code == 2 and "tool.hloscan.bogus" in res.output


# ---------------------------------------------------------------------- baseline


def test_baseline_round_trip(marked, workdir):
    dump = workdir / "dump.hlo.txt"
    dump.write_text(_lint_check.module_text("FLAG", inst="a") + "\n// -----\n\n"
                    + _lint_check.module_text("FLAG", name="m2", inst="b"), encoding="utf-8")
    base = workdir / "baseline.json"
    res = run("--write-baseline", str(base), str(dump))
    assert res.exit_code == 0, res.output
    entries = json.loads(base.read_text())["findings"]
    assert {(e["module"], e["instruction"], e["count"]) for e in entries} == {("m", "a", 1), ("m2", "b", 1)}
    assert run("--baseline", str(base), str(dump)).exit_code == 0

    # Re-dumped with lines shifted: still accepted. A new offender is reported, and only it.
    shifted = "// a comment\n\n\n" + _lint_check.module_text("FLAG", inst="a") + "\n// -----\n\n" + \
        _lint_check.module_text("FLAG", name="m2", inst="b") + "\n// -----\n\n" + \
        _lint_check.module_text("FLAG", name="m3", inst="c")
    dump.write_text(shifted, encoding="utf-8")
    res = run("--baseline", str(base), "--format", "json", str(dump))
    assert res.exit_code == 1
    findings = json.loads(res.stdout)["findings"]
    assert [(f["module"], f["instruction"]) for f in findings] == [("m3", "c")]


def test_bad_baseline_is_exit_2(marked, workdir):
    dirty = write(workdir, "dirty.hlo.txt", _lint_check.module_text("FLAG"))
    bad = write(workdir, "baseline.json", "{not json")
    res = run("--baseline", str(bad), str(dirty))
    assert res.exit_code == 2 and "baseline" in res.output


# ---------------------------------------------------------------------- github annotations


def test_github_escaping_rules():
    assert escape_data("50% a\r\nb: c, d") == "50%25 a%0D%0Ab: c, d"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_dump_strings_cannot_split_a_report_line():
    """Line separators other than \\n (found by the fuzzer in a metadata source_file) stay inside one line."""
    from hloscan.reporters.text import clean

    hostile = "a\u2028b\u2029c\x85d\x1ce\x0bf\x1bg"
    assert len(escape_data(hostile).splitlines()) == 1 and "\\u2028" in escape_data(hostile)
    assert len(clean(hostile).splitlines()) == 1 and "\\x1b" in clean(hostile)


def test_github_format_escapes_dump_strings(marked, workdir):
    folder = workdir / "odd,dir:100%"
    write(workdir, "src/model.py", "def f(): ...\n")
    dump = write(folder, "f.hlo.txt", _lint_check.module_text("FLAG x,y: 5% done\nnext ::error::",
                                                              source=str(workdir / "src" / "model.py")))
    res = run("--format", "github", "--no-config", str(dump))
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert len(lines) == 1
    line = lines[0]
    # Points at the Python source from the metadata (relative to the checkout); the dump location is in the text.
    assert line.startswith("::warning file=src/model.py,line=7,title=HLO098::")
    assert "FLAG x,y: 5%25 done%0Anext ::error::" in line
    assert "odd,dir:100%25" in line  # the dump path is message data: only %, CR and LF are escaped
    assert "\n" not in line and "\r" not in line


@pytest.mark.parametrize("source", ["/elsewhere/model.py", "-", ""])
def test_github_format_points_at_dump_without_usable_source(marked, workdir, source):
    folder = workdir / "odd,dir:100%"
    text = _lint_check.module_text("FLAG", source=source)
    if not source:
        text = text.replace(' source_file="" source_line=7', "")
    dump = write(folder, "f.hlo.txt", text)
    res = run("--format", "github", str(dump))
    assert res.stdout.startswith("::warning file=odd%2Cdir%3A100%25/f.hlo.txt,line=5,col=3,title=HLO098::")
    assert ("%0APython: " in res.stdout) == bool(source)


def test_github_format_reports_parse_errors(workdir):
    broken = write(workdir, "broken.hlo.txt", "HloModule m\n\nENTRY main {\n  p = f32[8 parameter(0)\n}\n")
    res = run("--format", "github", str(broken))
    assert res.exit_code == 2
    assert res.stdout.startswith("::error file=broken.hlo.txt,line=4,")
    assert "title=HLO001::" in res.stdout


# ---------------------------------------------------------------------- rules / rule


def test_rules_lists_every_check(marked):
    from hloscan.lint.registry import all_checks

    res = CliRunner().invoke(main, ["rules"])
    assert res.exit_code == 0
    for check in all_checks():
        assert check.code in res.output and check.name in res.output and check.summary() in res.output
    rows = json.loads(CliRunner().invoke(main, ["rules", "--format", "json"]).output)
    row = next(r for r in rows if r["code"] == "HLO098")
    assert row == {"code": "HLO098", "name": "marked-instruction", "severity": "warning", "xla_error": None,
                   "stage": "before_optimizations", "summary": "An instruction whose op_name metadata contains the marker."}


@pytest.mark.parametrize("ref", ["HLO098", "hlo098", "marked-instruction"])
def test_rule_by_code_or_name(marked, ref):
    res = CliRunner().invoke(main, ["rule", ref])
    assert res.exit_code == 0
    out = res.output
    assert out.startswith("# marked-instruction (HLO098)\n")
    assert "Severity: warning" in out and "XLA error: none" in out and "Family: test-only (HLO0xx)" in out
    assert "## Why it matters" in out and "marker (str, default 'FLAG')" in out


def test_rule_unknown_and_tool_codes():
    res = CliRunner().invoke(main, ["rule", "HLO777"])
    assert res.exit_code == 2 and "HLO777" in res.output
    res = CliRunner().invoke(main, ["rule", "HLO001"])
    assert res.exit_code == 0 and res.output.startswith("# syntax-error (HLO001)")


def test_explain_xla_code(marked):
    from hloscan.lint.registry import all_checks, predicting
    from hloscan.analyses.xla_errors import explain_xla_code

    text = explain_xla_code("E1200", predicting)
    assert text.startswith("E1200: CompileTimeHostOffloadOutputLocationMismatch")
    for check in all_checks():
        if check.xla_error == "E1001":
            assert check.code in explain_xla_code("e1001", predicting)
    assert "E0102" in explain_xla_code("0102", predicting)
    assert explain_xla_code("E9999", predicting) is None and explain_xla_code("HLO201", predicting) is None


# ---------------------------------------------------------------------- Python API


def test_python_api(marked, tmp_path):
    import hloscan

    text = _lint_check.module_text("FLAG")
    assert [f.code for f in hloscan.check(text)] == ["HLO098"]
    assert hloscan.check(text, ignore=["HLO098"]) == []
    assert hloscan.check(text, checks={"HLO098": {"marker": "zzz"}}) == []
    path = write(tmp_path, "x.hlo.txt", text)
    assert [f.key() for f in hloscan.check(path)] == [("HLO098", 5)]
    assert [f.key() for f in hloscan.check(str(path), jobs=2)] == [("HLO098", 5)]
    assert hloscan.load(path)[0].name == "m"
    with pytest.raises(ValueError, match="select"):
        hloscan.check(text, select=["HLO7"])
