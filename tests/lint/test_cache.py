"""The result cache of `hloscan check` (hloscan.lint.cache): a warm run gives the cold run's report byte for
byte, on every corpus folder and in every format; whatever the findings depend on (the file, side files,
settings, the module group's stages, hloscan's version) invalidates an entry; corrupt entries, concurrent
runs, --no-cache and the size bound. No test here is timed: the speed is `make bench`'s."""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import _lint_check
import hloscan
from corpus import CORPUS, FIXTURES, corpus_dir
from hloscan.cli import main
from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.loader import READ_FAILURE, LoadedFile
from hloscan.lint import cache as cache_module
from hloscan.lint import scan as scan_module
from hloscan.lint.cache import PRUNE_TO, ResultCache, prune
from hloscan.lint.config import Config
from hloscan.lint.finding import Finding, Related, Severity, SourceLocation, Span
from hloscan.lint.serialize import Unencodable, decode_finding, encode_finding
from hloscan.reporters import REPORTERS

# Every folder of ../shared/corpus, each scanned once cold and once warm (tpu-oracle, the largest, takes the
# longest: half a minute cold on two cores; all of it is kept, as the warm run must equal the cold one on each).
CORPUS_FOLDERS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
OFFLOAD_DEMO = FIXTURES / "demo" / "offload_output.hlo.txt"


def cache_dir() -> Path:
    return Path(os.environ["HLOSCAN_CACHE_DIR"])  # the test's own (conftest)


def entries() -> dict[str, bytes]:
    folder = cache_dir()
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def check(*args: str, jobs: str = "1"):
    result = CliRunner().invoke(main, ["check", "--jobs", jobs, *args])
    assert result.exit_code in (0, 1, 2), result.output
    return result


def without_timing(report: str) -> str:
    """The JSON report minus what differs from run to run by design (`timing`, documented as such)."""
    return re.sub(r'"seconds": (?:[0-9.]+|null)', '"seconds": _', report)


def codes(report: str) -> list[str]:
    return [f["code"] for f in json.loads(report)["findings"]]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no config file above it
    return tmp_path


@pytest.fixture
def marked():
    with _lint_check.registered() as check_class:
        yield check_class


def no_rescans(monkeypatch):
    """From now on a file that is scanned instead of read from the cache fails the test."""
    def refuse(task, *args, **kwargs):
        raise AssertionError(f"{task.path} was scanned, not read from the cache")

    monkeypatch.setattr(scan_module, "scan_file", refuse)


def plant(message: str) -> None:
    """Rewrite every cached finding's message: a run that prints it was answered from the cache."""
    for path in cache_dir().glob("*.json"):
        doc = json.loads(path.read_text())
        for finding in doc["findings"]:
            finding["message"] = message
        path.write_text(json.dumps(doc))


# ---------------------------------------------------------------------- exact round trips


def test_finding_round_trips_exactly():
    data = {"path": [{"computation": "c", "instruction": "i", "shape_index": (1, 0)}], 3: (None, True, 2.5),
            "nested": {"inf": math.inf, "-inf": -math.inf, "big": 2**70, "list": [1, [2, (3,)]]},
            "nan": math.nan, "text": "caf\u00e9 \udcff \u2028"}
    original = Finding(code="HLO101", name="n", severity=Severity.WARNING, message="m \x1b[31m \udcff",
                       span=Span("d\udcff.hlo", 3, 4, 5, 6), module="m", computation="c", instruction="i",
                       hint="h", xla_error="E1200", source=SourceLocation("model.py", 7, "f"),
                       related=(Related(Span("other.hlo", 1, 2), "note"),), data=data)
    decoded = decode_finding(json.loads(json.dumps(encode_finding(original))))
    assert decoded == original
    assert repr(decoded.data) == repr(original.data)  # tuple vs list, int vs float, key types and order
    assert decoded.span.end_line == 5 and decoded.source.function == "f"


@pytest.mark.parametrize("value", [{1, 2}, frozenset(), Severity.ERROR, Path("x"), b"bytes"])
def test_values_without_an_exact_json_form_are_refused(value):
    finding = Finding(code="HLO101", name="n", severity=Severity.NOTE, message="m", span=Span("a", 1),
                      data={"x": value})
    with pytest.raises(Unencodable):
        encode_finding(finding)


def test_a_result_that_cannot_be_encoded_is_not_cached(tmp_path):
    dump = tmp_path / "a.hlo"
    dump.write_text(_lint_check.module_text("fine"))
    session = ResultCache(tmp_path / "cache", 10**6).session({}, {}, None)
    probe = session.lookup(str(dump), (), ())
    odd = Finding(code="HLO101", name="n", severity=Severity.NOTE, message="m", span=Span(str(dump), 1),
                  data={"x": {1}})
    session.store(probe, LoadedFile(str(dump)), [odd])
    assert not (tmp_path / "cache").exists()
    session.store(probe, LoadedFile(str(dump), error=HloSyntaxError(f"{READ_FAILURE}: EIO", path=str(dump))), [])
    assert not (tmp_path / "cache").exists()  # a failed read may succeed next time


# ---------------------------------------------------------------------- warm equals cold


@pytest.mark.parametrize("folder", CORPUS_FOLDERS)
def test_warm_run_equals_cold_run_on_every_corpus_folder(folder, monkeypatch):
    path = str(corpus_dir(folder))
    cold = check("--format", "json", path, jobs="2")
    scanned = json.loads(cold.stdout)["summary"]["files"]
    assert len(entries()) == scanned  # every file of the corpus is cacheable
    stored = entries()
    no_rescans(monkeypatch)
    warm = check("--format", "json", path, jobs="2")
    assert warm.exit_code == cold.exit_code and warm.stderr == cold.stderr
    assert without_timing(warm.stdout) == without_timing(cold.stdout)
    assert entries().keys() == stored.keys()


def test_every_format_prints_the_same_bytes_from_the_cache(tmp_path, monkeypatch):
    paths = [str(corpus_dir("xla-host-offload"))]  # findings with paths, related locations and sources
    cache = ResultCache(tmp_path / "cache", 10**8)
    cold = scan_module.scan(paths, Config(), cache=cache)
    no_rescans(monkeypatch)
    warm = scan_module.scan(paths, Config(), cache=cache)
    warm.started, warm.elapsed = cold.started, cold.elapsed  # the only fields that differ by design
    assert cold.findings and len(cold.files) == len(warm.files)
    for fmt, render in sorted(REPORTERS.items()):
        printed = []
        for result in (cold, warm):
            out = io.StringIO()
            render(result, out, fmt == "text")
            printed.append(out.getvalue())
        assert printed[0] == printed[1], fmt


def test_a_syntax_error_is_cached_and_still_reported(workdir, monkeypatch):
    (workdir / "bad.hlo").write_text("HloModule m\n\nENTRY main {\n  p = f32[8 parameter(0)\n}\n")
    (workdir / "good.hlo").write_text(_lint_check.module_text("fine"))
    cold = check("bad.hlo", "good.hlo")
    assert cold.exit_code == 2 and "bad.hlo:4:" in cold.output and "HLO001" in cold.output
    assert len(entries()) == 2
    no_rescans(monkeypatch)
    warm = check("bad.hlo", "good.hlo")
    assert (warm.exit_code, warm.output) == (cold.exit_code, cold.output)


# ---------------------------------------------------------------------- what invalidates an entry


def test_no_cache_neither_reads_nor_writes(workdir):
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    assert check("--no-cache", "d.hlo.txt").exit_code == 1
    assert not entries()
    check("d.hlo.txt")
    plant("PLANTED")
    planted = entries()
    assert "PLANTED" in check("d.hlo.txt").output  # the default run reads the cache
    assert "PLANTED" not in check("--no-cache", "d.hlo.txt").output
    assert entries() == planted  # and --no-cache did not rewrite it


def test_an_edited_file_is_scanned_again(workdir, marked):
    dump = workdir / "d.hlo"
    dump.write_text(_lint_check.module_text("FLAG"))
    assert check(str(dump)).exit_code == 1
    dump.write_text(_lint_check.module_text("fine"))
    assert check(str(dump)).exit_code == 0


@pytest.mark.parametrize("first, second", [
    ('[checks.marked-instruction]\nmarker = "FLAG"\n', '[checks.marked-instruction]\nmarker = "NOPE"\n'),
    ('', '[severity]\nHLO098 = "error"\n'),
    ('', 'ignore = ["HLO098"]\n'),
    ('', '[per-path-ignores]\n"*.hlo" = ["HLO098"]\n'),
])
def test_a_config_change_invalidates(workdir, marked, first, second):
    (workdir / "d.hlo").write_text(_lint_check.module_text("FLAG"))
    config = workdir / "hloscan.toml"
    config.write_text(first)
    before = check("--format", "json", "d.hlo").output
    plant("PLANTED")
    config.write_text(second)
    after = check("--format", "json", "d.hlo").output
    assert "PLANTED" not in after
    assert without_timing(after) == without_timing(check("--no-cache", "--format", "json", "d.hlo").output)
    assert without_timing(after) != without_timing(before)


@pytest.mark.parametrize("flags", [["--tpu", "v6e"], ["--host-outputs", "1"], ["--strict"], ["--fast"],
                                   ["--select", "HLO1"]])
def test_an_option_change_invalidates(workdir, flags):
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    check("d.hlo.txt")
    plant("PLANTED")
    assert "PLANTED" not in check(*flags, "d.hlo.txt").output


def test_a_version_change_invalidates(workdir, monkeypatch):
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    check("d.hlo.txt")
    plant("PLANTED")
    assert "PLANTED" in check("d.hlo.txt").output
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    cache_module.hloscan_fingerprint.cache_clear()
    try:
        assert "PLANTED" not in check("d.hlo.txt").output
        monkeypatch.setattr(cache_module, "FORMAT", cache_module.FORMAT + 1)  # and a new entry layout
        assert "PLANTED" not in check("d.hlo.txt").output
    finally:
        cache_module.hloscan_fingerprint.cache_clear()


def test_the_fingerprint_covers_the_package_sources():
    fingerprint = cache_module.hloscan_fingerprint()
    try:
        original = cache_module._identity
        seen = []

        def identity(path):  # pretend one source file was edited
            seen.append(path)
            found = original(path)
            return found[:3] + (found[3] + 1,) if path.endswith("lint/scan.py") and found else found

        cache_module._identity = identity
        cache_module.hloscan_fingerprint.cache_clear()
        assert cache_module.hloscan_fingerprint() != fingerprint
        assert any(p.endswith("checks/hbm/hlo401_hbm_out_of_memory.py") for p in seen)
        assert any(p.endswith("hlo.lark") for p in seen)
        assert any(p.endswith("lark/lark.py") for p in seen)  # lark words --strict's syntax errors
    finally:
        cache_module._identity = original
        cache_module.hloscan_fingerprint.cache_clear()


def test_a_side_report_that_changes_invalidates(workdir):
    case = workdir / "case"
    shutil.copytree(FIXTURES / "hbm" / "reported", case)
    before = check("--tpu", "v5e", "--format", "json", str(case)).stdout
    report = case / "memory-usage-report.txt"
    report.write_text(report.read_text().replace("Total bytes: 1073741824", "Total bytes: 21474836480", 1))
    after = check("--tpu", "v5e", "--format", "json", str(case)).stdout
    assert "HLO401" in codes(after) and "HLO401" not in codes(before)
    assert without_timing(after) == without_timing(check("--no-cache", "--tpu", "v5e", "--format", "json",
                                                         str(case)).stdout)
    report.unlink()  # gone: the figures are predicted again
    assert without_timing(check("--tpu", "v5e", "--format", "json", str(case)).stdout) == \
        without_timing(check("--no-cache", "--tpu", "v5e", "--format", "json", str(case)).stdout)


@pytest.mark.parametrize("select", [[], ["--select", "HLO101"]])  # HLO101 alone: the same checks either way
def test_a_later_stage_beside_an_unchanged_file_invalidates(workdir, select):
    dump = workdir / "dump"
    dump.mkdir()
    shutil.copy(OFFLOAD_DEMO, dump / "module_0001.jit_f.before_optimizations.txt")
    alone = check(*select, "--format", "json", str(dump)).stdout
    assert "HLO101" in codes(alone)
    # XLA got past its host offloader: the unchanged before_optimizations file no longer gets E1200.
    shutil.copy(OFFLOAD_DEMO, dump / "module_0001.jit_f.after_optimizations.txt")
    grouped = check(*select, "--format", "json", str(dump)).stdout
    assert [f["xla_error"] for f in json.loads(grouped)["findings"]].count("E1200") == 0
    assert without_timing(grouped) == without_timing(check(*select, "--no-cache", "--format", "json",
                                                           str(dump)).stdout)


# ---------------------------------------------------------------------- robustness


@pytest.mark.parametrize("garbage", [b"", b"{", b"\x00\xff\xfe binary", b"[]", b'{"format": 1}', b"null",
                                     b'{"format": 1, "key": "0", "modules": [], "error": null, "notes": [],'
                                     b' "findings": []}'])
def test_a_corrupt_entry_is_ignored_and_rewritten(workdir, garbage):
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    cold = check("--format", "json", "d.hlo.txt").output
    good = entries()
    for name in good:
        (cache_dir() / name).write_bytes(garbage)
    warm = check("--format", "json", "d.hlo.txt").output
    assert without_timing(warm) == without_timing(cold)
    assert entries() == good


def test_an_entry_under_another_key_is_not_used(workdir, marked):
    (workdir / "a.hlo").write_text(_lint_check.module_text("FLAG"))
    (workdir / "b.hlo").write_text(_lint_check.module_text("fine"))
    check("a.hlo", "b.hlo")
    stored = entries()
    flagged = next(n for n, body in stored.items() if b"HLO098" in body)
    clean = next(n for n in stored if n != flagged)
    (cache_dir() / clean).write_bytes(stored[flagged])  # a copied entry: its key names the other file
    assert check("b.hlo").exit_code == 0


def test_concurrent_runs_share_one_cache(workdir):
    folder = str(corpus_dir("xla-parser"))
    cold = subprocess.run([sys.executable, "-m", "hloscan", "check", "--no-cache", "--format", "json", "--exit-zero",
                           folder], capture_output=True, text=True).stdout
    runs = [subprocess.Popen([sys.executable, "-m", "hloscan", "check", "--format", "json", "--exit-zero", "-j", "1",
                              folder], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [run.communicate()[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0]
    assert all(without_timing(out) == without_timing(cold) for out in outputs)
    assert not list(cache_dir().glob(".tmp-*"))
    stored = entries()
    assert len(stored) == json.loads(cold)["summary"]["files"]
    assert all(json.loads(body)["key"] == name.removesuffix(".json") for name, body in stored.items())


def test_standard_input_is_never_cached(workdir):
    result = CliRunner().invoke(main, ["check", "-"], input=OFFLOAD_DEMO.read_text())
    assert result.exit_code == 1 and "HLO101" in result.output
    assert not entries()


def test_a_crashed_check_is_not_cached(workdir, monkeypatch):
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    from hloscan.checks.host_offload.hlo101_host_offload_output import HostOffloadOutputMismatch

    monkeypatch.setattr(HostOffloadOutputMismatch, "run", lambda self, ctx: 1 / 0)
    assert "HLO900" in check("d.hlo.txt").output
    assert not entries()


def test_a_read_only_cache_folder_only_costs_the_cache(workdir, tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("HLOSCAN_CACHE_DIR", str(blocked / "cache"))
    shutil.copy(OFFLOAD_DEMO, workdir / "d.hlo.txt")
    assert check("d.hlo.txt").exit_code == 1


# ---------------------------------------------------------------------- the size bound


def test_the_folder_stays_under_its_bound(workdir, monkeypatch):
    monkeypatch.setenv("HLOSCAN_CACHE_MAX_MB", "0.05")  # 50 kB: a few dozen of xla-parser's entries
    folder = str(corpus_dir("xla-parser"))
    check("--format", "json", folder)
    sizes = [len(body) for body in entries().values()]
    assert 0 < sum(sizes) <= 50_000 and len(sizes) < 315


def test_pruning_removes_the_least_recently_used_first(tmp_path):
    now = time.time()
    for age in range(10):  # entry i was last used i hours ago
        entry = tmp_path / f"{age:064x}.json"
        entry.write_bytes(b"x" * 1000)
        os.utime(entry, (now - 3600 * age, now - 3600 * age))
    stale, fresh = tmp_path / ".tmp-old.json", tmp_path / ".tmp-new.json"
    for temp, age in ((stale, 7200), (fresh, 0)):
        temp.write_bytes(b"partial")
        os.utime(temp, (now - age, now - age))
    (tmp_path / "unrelated.txt").write_bytes(b"y" * 10_000)  # not ours: never deleted
    prune(tmp_path, 5000)
    kept = sorted(int(p.stem, 16) for p in tmp_path.glob("*.json") if not p.name.startswith("."))
    assert kept == list(range(int(5000 * PRUNE_TO) // 1000))
    assert fresh.exists() and not stale.exists() and (tmp_path / "unrelated.txt").exists()


# ---------------------------------------------------------------------- the API


def test_the_api_caches_only_when_asked(tmp_path, monkeypatch):
    shutil.copy(OFFLOAD_DEMO, tmp_path / "d.hlo.txt")
    plain = hloscan.check(str(tmp_path / "d.hlo.txt"))
    assert not entries()
    cached = hloscan.check(str(tmp_path / "d.hlo.txt"), cache=tmp_path / "mine")
    assert len(list((tmp_path / "mine").glob("*.json"))) == 1
    no_rescans(monkeypatch)
    again = hloscan.check(str(tmp_path / "d.hlo.txt"), cache=tmp_path / "mine")
    assert [f.to_dict() for f in again] == [f.to_dict() for f in cached] == [f.to_dict() for f in plain]
    with pytest.raises(TypeError):
        hloscan.check(str(tmp_path / "d.hlo.txt"), cache=3)
