"""XLA's memory-usage report / buffer assignment beside a dump give the exact figure; --no-reports ignores them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from corpus import FIXTURES as FIXTURES_ROOT
from hloscan.analyses.hbm.reports import parse_buffer_assignment, parse_memory_usage_report, read_report, sibling
from hloscan.cli import main

FIXTURES = FIXTURES_ROOT / "hbm"
REPORTED = FIXTURES / "reported" / "after_optimizations.txt"


def test_report_total_and_allocations():
    report = read_report(str(REPORTED))
    assert report is not None and report.total_bytes == 1 << 30
    assert report.arguments_bytes == 536870912 and report.temp_heap_bytes == 536870400
    kinds = [a.kind for a in report.allocations]
    assert kinds == ["parameter", "output", "temp", "temp"] and report.allocations[3].color == 1


def test_sibling_uses_the_dump_prefix(tmp_path):
    dump = tmp_path / "module_0001.jit_f.after_optimizations.txt"
    dump.write_text("HloModule m\n")
    assert sibling(str(dump), "memory-usage-report.txt") is None
    (tmp_path / "module_0001.jit_f.memory-usage-report.txt").write_text("x")
    (tmp_path / "module_0002.jit_g.memory-usage-report.txt").write_text("y")
    assert sibling(str(dump), "memory-usage-report.txt").endswith("module_0001.jit_f.memory-usage-report.txt")
    # XLA's own naming wins: `<prefix>after_optimizations-memory-usage-report.txt`.
    (tmp_path / "module_0001.jit_f.after_optimizations-memory-usage-report.txt").write_text("z")
    assert sibling(str(dump), "memory-usage-report.txt").endswith("jit_f.after_optimizations-memory-usage-report.txt")


def test_parsers_ignore_other_spaces_and_trailing_sections():
    assert parse_memory_usage_report("Memory Space: vmem (color=1)\nTotal bytes: 5\n") is None
    allocs = parse_buffer_assignment("allocation 0: size 10, parameter 2, shape |f32[]|:\n\nTotal bytes used: 10\n"
                                     "allocation 9: size 99, preallocated-temp:\n")
    assert [(a.index, a.parameter) for a in allocs] == [(0, 2)]


def _json(*args):
    result = CliRunner().invoke(main, ["hbm", "--format", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_exact_when_reported_and_simulated_without_reports():
    code, data = _json("--tpu", "v5e", str(REPORTED))
    [m] = data["modules"]
    assert data["version"] == 1 and code == 0
    assert (m["kind"], m["xla_total_bytes"], m["verdict"]) == ("exact", 1 << 30, "ok")
    code, data = _json("--tpu", "v5e", "--no-reports", str(REPORTED))
    [m] = data["modules"]
    assert m["kind"] == "simulated" and m["verdict"] == "E1000" and code == 1
