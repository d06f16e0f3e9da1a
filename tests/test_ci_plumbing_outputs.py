"""Issue 11 items 1, 2, 12: report and baseline files are checked before the scan, written whole or not at
all, never over an input, and valid whatever the input file names are."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscan.cli import main
from hloscan.lint.files import atomic_write, printable, uri_path

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "offload_output.hlo.txt"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


def _scan_must_not_run(monkeypatch):
    """The output checks happen before any scanning: make a scan fail loudly if it starts."""
    import hloscan.cli.check as check_module

    def boom(*_a, **_k):
        raise AssertionError("scanned before checking the output path")

    monkeypatch.setattr(check_module, "scan", boom)


@pytest.mark.parametrize("args", [
    ["check", "--format", "sarif", "-o", "nodir/x.sarif"],
    ["check", "--write-baseline", "nodir/b.json"],
])
def test_missing_output_folder_is_exit_2_before_scanning(workdir, monkeypatch, args):
    _scan_must_not_run(monkeypatch)
    result = run(*args, str(DEMO))
    assert result.exit_code == 2
    assert "nodir" in result.output and "does not exist" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_graph_missing_output_folder_is_exit_2(workdir):
    result = run("graph", str(DEMO), "--finding", "1", "-o", "nodir/x.dot")
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert not isinstance(result.exception, FileNotFoundError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_output_folder_is_exit_2(workdir):
    locked = workdir / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run("check", "-o", str(locked / "x.json"), str(DEMO))
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 2 and "not writable" in result.output


def test_output_that_is_an_input_is_refused(workdir):
    dump = workdir / "dump.hlo.txt"
    shutil.copy(DEMO, dump)
    before = dump.read_bytes()
    for option in ("-o", "--write-baseline"):
        result = run("check", option, str(dump), str(dump))
        assert result.exit_code == 2, option
        assert "one of the inputs" in result.output
        assert dump.read_bytes() == before
    # also when the input is found inside a scanned folder
    result = run("check", "-o", str(dump), str(workdir))
    assert result.exit_code == 2 and dump.read_bytes() == before


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "report.sarif"
    target.write_text("old report\n")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as handle:
            handle.write("half a rep")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.sarif"]  # no temp file left
    with atomic_write(target) as handle:
        handle.write("new\n")
    assert target.read_text() == "new\n"


def test_failed_report_keeps_previous_output(workdir, monkeypatch):
    """A reporter that fails half-way (here: forced) must not leave a 0-byte or truncated report."""
    import hloscan.cli.check as check_module

    out = workdir / "out.sarif"
    out.write_text("previous\n")

    def broken(result, handle, colour):
        handle.write("{")
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "forced")

    monkeypatch.setitem(check_module.REPORTERS, "sarif", broken)
    result = run("check", "--format", "sarif", "-o", str(out), str(DEMO))
    assert result.exit_code != 0
    assert out.read_text() == "previous\n"


needs_bytes_names = pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")


@needs_bytes_names
def test_non_utf8_file_name_gives_valid_sarif(workdir):
    folder = workdir / "dumps"
    folder.mkdir()
    bad = os.fsdecode(b"bad\xffname.hlo")
    shutil.copy(DEMO, folder / bad)
    result = run("check", "--format", "sarif", "-o", "out.sarif", str(folder))
    assert result.exit_code == 1, result.output  # the finding, not a crash
    raw = (workdir / "out.sarif").read_bytes()
    doc = json.loads(raw.decode("utf-8"))  # strict UTF-8
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert uris == {"dumps/bad%FFname.hlo"}


@needs_bytes_names
@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_non_utf8_file_name_in_other_formats(workdir, fmt):
    folder = workdir / "dumps"
    folder.mkdir()
    shutil.copy(DEMO, folder / os.fsdecode(b"bad\xffname.hlo"))
    result = run("check", "--format", fmt, "-o", "out.txt", str(folder))
    assert result.exit_code == 1, result.output
    text = (workdir / "out.txt").read_bytes().decode("utf-8")
    if fmt == "json":  # the name is shown escaped, and JSON escapes that backslash again (issue 23 item 18)
        text = json.loads(text)["files"][0]["path"]
    assert "bad\\xffname.hlo" in text or "bad\\udcffname.hlo" in text


def test_printable_and_uri_path():
    name = os.fsdecode(b"a\xffb c")
    assert printable(name) == "a\\xffb c"
    assert uri_path(name) == "a%FFb%20c"
    assert uri_path("caf\u00e9.hlo") == "caf%C3%A9.hlo"
    assert printable("\ud800x") == "\\ud800x"
