"""hloscan.check() / hloscan.load(): the same inputs for both (text, bytes, path, PathLike, list of paths),
per-file errors returned, not raised (issue 11, item 11)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import hloscan
from hloscan.api import Findings, Modules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "checks" / "HLO101"
FIRES = FIXTURES / "fires_tuple_element.hlo.txt"
GOOD = "HloModule m\n\nENTRY main {\n  ROOT p = f32[8]{0} parameter(0)\n}\n"


@pytest.fixture
def mixed(tmp_path):
    """A folder with one firing dump, one quiet dump and one broken dump."""
    shutil.copy(FIRES, tmp_path / "a_fires.hlo.txt")
    (tmp_path / "b_good.hlo.txt").write_text(GOOD)
    (tmp_path / "c_bad.hlo.txt").write_text("HloModule bad\n\nENTRY main {\n  ROOT p = f32[8]{0} parameterz(0)\n}\n")
    return tmp_path


def test_empty_string_is_empty_text_not_the_current_directory(tmp_path, monkeypatch):
    shutil.copy(FIRES, tmp_path / "x.hlo.txt")
    monkeypatch.chdir(tmp_path)
    findings = hloscan.check("")
    assert [f.code for f in findings] == ["HLO001"] and "no HLO module" in findings[0].message
    assert len(findings.errors) == 1 and not findings.ok
    assert not hloscan.load("") and hloscan.load("").errors


def test_load_accepts_the_text_check_accepts():
    assert [f.code for f in hloscan.check(GOOD)] == []
    modules = hloscan.load(GOOD)
    assert isinstance(modules, Modules) and [m.name for m in modules] == ["m"] and modules.ok
    one_line = "HloModule m ENTRY main { ROOT p = f32[8]{0} parameter(0) }"
    assert [m.name for m in hloscan.load(one_line)] == ["m"] and hloscan.check(one_line).ok


def test_bytes_and_pathlike_and_list_of_paths(mixed):
    assert [m.name for m in hloscan.load(GOOD.encode())] == ["m"]
    assert hloscan.check(FIRES.read_bytes()) and hloscan.check(FIRES.read_bytes())[0].code == "HLO101"
    binary = hloscan.check(b"HloModule m\x00")
    assert [f.code for f in binary] == ["HLO001"] and "NUL" in binary.errors[0].message
    assert [f.code for f in hloscan.check(FIRES)] == ["HLO101"]
    both = hloscan.check([mixed / "a_fires.hlo.txt", str(mixed / "b_good.hlo.txt")])
    assert [f.code for f in both] == ["HLO101"] and both.ok and len(both.files) == 2
    assert [m.name for m in hloscan.load([str(mixed / "b_good.hlo.txt"), mixed / "a_fires.hlo.txt"])][0] == "m"


def test_folder_keeps_good_results_and_returns_the_bad_file(mixed):
    findings = hloscan.check(mixed)
    assert isinstance(findings, Findings) and isinstance(findings, list)
    assert sorted(f.code for f in findings) == ["HLO001", "HLO101"]
    bad = [f for f in findings if f.code == "HLO001"][0]
    assert bad.span.path.endswith("c_bad.hlo.txt") and (bad.span.line, bad.span.col) == (4, 3)
    assert [e.path for e in findings.errors] == [bad.span.path]
    modules = hloscan.load(mixed)
    assert len(modules) == 2 and len(modules.errors) == 1 and modules.errors[0].line == 4


def test_missing_path_is_an_error_not_an_exception(tmp_path):
    findings = hloscan.check(tmp_path / "nope.hlo.txt")
    assert [f.code for f in findings] == ["HLO001"] and "cannot read input" in findings[0].message


def test_iteration_and_list_equality_still_work():
    findings = hloscan.check(FIRES.read_text())
    assert [f.code for f in findings] == ["HLO101"]
    assert hloscan.check(FIRES.read_text(), ignore=["HLO1"]) == []


def test_other_types_are_programmer_errors():
    with pytest.raises(TypeError, match="cannot read a int"):
        hloscan.check(3)
    with pytest.raises(TypeError, match="item 1"):
        hloscan.check(["a.txt", GOOD])
