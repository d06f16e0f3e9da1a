"""Issue 23: defects found by trying hloscan as a new user would. Each test fails without its fix; the
processes run through the real entry point (`python -m hloscan`), as a shell would run them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "fixtures" / "demo" / "offload_output.hlo.txt"


def hloscan(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hloscan", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, **kwargs)


# ------------------------------------------------------------------------------------------ 1, 3: outputs


def _device(tmp_path: Path, name: str, minor: int) -> Path:
    """A character device to write to. As root (CI containers) a private node of the same device in tmp_path,
    so a regression replaces that node and not the machine's /dev/null; otherwise the system's own (which a
    non-root process cannot replace)."""
    system = Path("/dev") / name
    if os.geteuid() != 0:
        return system
    node = tmp_path / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return node


def test_output_to_a_device_writes_through_and_keeps_the_device(tmp_path: Path) -> None:
    """1: `-o /dev/null` as root used to replace /dev/null with a regular file."""
    null = _device(tmp_path, "null", 3)
    done = hloscan("check", "-o", str(null), str(DEMO))
    assert done.returncode == 1  # the demo's finding
    assert stat.S_ISCHR(os.stat(null).st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_device_is_a_message_and_exit_2(tmp_path: Path) -> None:
    full = _device(tmp_path, "full", 7)
    done = hloscan("check", "-o", str(full), str(DEMO))
    assert done.returncode == 2
    assert f"cannot write {full}" in done.stderr and "Traceback" not in done.stderr
    assert stat.S_ISCHR(os.stat(full).st_mode)


def test_output_to_a_fifo_reaches_its_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    done = hloscan("check", "--format", "json", "-o", str(fifo), str(DEMO))
    reader.join(30)
    assert done.returncode == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].lstrip().startswith("{") and '"findings"' in got[0]


@pytest.mark.parametrize("args", [["check", "-o", "/proc/hloscan-x.json"],
                                  ["graph", "--finding", "1", "-o", "/proc/hloscan-x.dot"]])
def test_a_write_that_fails_after_the_checks_is_exit_2_without_traceback(args: list[str]) -> None:
    """3: /proc passes the folder checks, then refuses the file."""
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc")
    done = hloscan(args[0], str(DEMO), *args[1:])
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "cannot write" in done.stderr


# ------------------------------------------------------------------------------------------ 4: closed pipes


@pytest.mark.parametrize("args", [["parse", str(REPO / "fixtures" / "checks")],
                                  ["check", "--format", "json", str(REPO / "fixtures" / "checks")]])
def test_a_reader_that_leaves_early_is_not_exit_1(args: list[str]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hloscan", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(120)
    assert code in (0, -13, 141), (code, err)  # -13: killed by SIGPIPE, as `head` leaves `cat`
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------------ 2: host_outputs


def test_host_outputs_cannot_hide_an_output_the_dump_declares_in_device_memory() -> None:
    """2: `--host-outputs 1` turned the demo's real E1200 into 0 errors."""
    done = hloscan("check", "--format", "json", "--host-outputs", "1", str(DEMO))
    assert done.returncode == 1
    import json
    findings = json.loads(done.stdout)["findings"]
    (hit,) = [f for f in findings if f["code"] == "HLO101"]
    assert hit["severity"] == "error" and "dump declares it in device memory" in hit["message"]


# ------------------------------------------------------------------------------------------ 15, 16, 29


def test_e1000_is_named_in_the_help_and_a_bare_hbm_message_is_explained() -> None:
    assert "E1000" in hloscan("--help").stdout
    done = hloscan("explain", "Ran out of memory on HBM")
    assert done.returncode == 0 and done.stdout.startswith("E1000")
    unknown = hloscan("explain", "something else entirely")
    assert unknown.returncode == 2 and "E1000" in unknown.stderr


def test_a_mistyped_command_is_suggested_not_read_as_a_path() -> None:
    done = hloscan("chek", "x.hlo")
    assert done.returncode == 2
    assert "did you mean `hloscan check`" in done.stderr and "HLO001" not in done.stdout + done.stderr


def test_graph_around_suggests_the_instruction_meant() -> None:
    done = hloscan("graph", str(DEMO), "--around", "tuple", "-o", os.devnull)
    assert done.returncode == 2 and "did you mean tuple.3" in done.stderr


def test_size_applies_the_default_tpu_tiling_to_a_shape_without_a_layout() -> None:
    done = hloscan("size", "--tpu", "v6e", "bf16[16,1280,40]")
    assert done.returncode == 0
    assert "{2,1,0:T(8,128)(2,1)}" in done.stdout and "5242880 bytes" in done.stdout
    assert hloscan("size", "--tpu", "v9z", "f32[8]").returncode == 2


def test_a_whole_vmem_capacity_error_is_not_called_e1001() -> None:
    """11: "Used 83.10M of 64.00M vmem" was labelled E1001 and offered a larger scoped limit."""
    done = hloscan("explain", "Ran out of memory in memory space vmem. Used 83.10M of 64.00M vmem. "
                              "Exceeded vmem capacity by 19.10M")
    assert done.returncode == 0
    first = done.stdout.splitlines()[0]
    assert "E1001" not in first and "HLO205" in first
    assert "vmem_limit_bytes=" not in done.stdout  # no fix that raises a scoped limit


def test_rule_pages_say_what_stage_means_and_elide_kernel_bytecode() -> None:
    """12: `rule HLO201` said "Stage: after_codegen" bare, and its example was lines of base64."""
    text = hloscan("rule", "HLO201").stdout
    assert "Stage: reads after_codegen when a dump folder holds several stages" in text
    assert "characters of base64 MLIR bytecode" in text
    assert max(len(line) for line in text.splitlines()) < 1000


def test_signature_and_memory_name_the_file_and_stage_of_each_module() -> None:
    """13: two stages of one module printed identical headers."""
    folder = REPO / "fixtures" / "oracle_new" / "sharded1" / "v5e__programs__dp_small_L4"
    for command in ("signature", "memory"):
        out = hloscan(command, str(folder)).stdout
        assert "after_optimizations.txt (after_optimizations)" in out
        assert "before_optimizations.txt (before_optimizations)" in out


def test_a_dump_folders_side_files_are_counted_not_itemised() -> None:
    """22: every dump folder ended with a long itemised "skipped" line."""
    folder = REPO / "fixtures" / "oracle_new" / "sharded1" / "v5e__programs__dp_small_L4"
    last = hloscan("check", str(folder)).stdout.strip().splitlines()[-1]
    assert last.endswith("2 other dump file(s) skipped")


def test_explain_with_a_dump_uses_the_memory_report_beside_it_as_hbm_does() -> None:
    """6: `explain --dump DIR` printed another figure than `hbm DIR` for the same folder."""
    case = REPO.parent / "shared" / "corpus" / "tpu-oracle" / "real" / "v5e__hbm__train_scan_L42_d1536_x1.25"
    if not case.is_dir():
        pytest.skip("shared corpus not beside the checkout")
    import json
    hbm = json.loads(hloscan("hbm", "--tpu", "v5e", "--format", "json", str(case)).stdout)
    figure = max(m["xla_total_bytes"] for m in hbm["modules"])
    explained = json.loads(hloscan("explain", "--format", "json", (case / "error.txt").read_text(),
                                   "--dump", str(case)).stdout)
    assert explained["dump"]["hloscan_total_bytes"] == figure
    assert explained["dump"]["kind"] == "exact"


def test_hbm_gives_no_tpu_verdict_for_a_cpu_compiled_module(tmp_path: Path) -> None:
    """7: CPU jax dumps got "ok on v5e (assumed)" for every module."""
    cpu = tmp_path / "module_0001.jit_f.after_optimizations.txt"
    cpu.write_text("HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,8]{1,0})->f32[8,8]{1,0}}\n\n"
                   "ENTRY %main (p: f32[8,8]) -> f32[8,8] {\n  %p = f32[8,8]{1,0} parameter(0)\n"
                   "  ROOT %n = f32[8,8]{1,0} negate(%p)\n}\n")
    done = hloscan("hbm", str(cpu))
    assert done.returncode == 0
    assert "compiled for CPU or GPU" in done.stdout and "-> ok" not in done.stdout


def test_a_non_utf8_byte_in_metadata_is_a_note_not_a_failed_file(tmp_path: Path) -> None:
    """17: one bad byte inside an op_name failed the whole file."""
    bad = tmp_path / "bad_meta.hlo.txt"
    bad.write_bytes(DEMO.read_bytes().replace(b'op_name="', b'op_name="\xff', 1))
    import json
    done = hloscan("check", "--format", "json", str(bad))
    assert done.returncode == 1  # the demo's E1200, not a parse failure (2)
    codes = [f["code"] for f in json.loads(done.stdout)["findings"]]
    assert "HLO002" in codes and "HLO101" in codes and "HLO001" not in codes


def test_parse_json_is_one_document() -> None:
    """19: `parse --format json` printed JSON Lines where every other command prints one document."""
    import json
    done = hloscan("parse", "--format", "json", str(DEMO), str(REPO / "fixtures" / "demo" / "bad.hlo"))
    doc = json.loads(done.stdout)
    assert doc["version"] == 1 and [f["ok"] for f in doc["files"]] == [True, False]


@pytest.mark.parametrize("compress", ["gzip", "xz"])
def test_compressed_standard_input_is_read(compress: str) -> None:
    """20: gz/xz data on standard input was "binary data (NUL byte)"."""
    import gzip
    import lzma
    data = (gzip.compress if compress == "gzip" else lzma.compress)(DEMO.read_bytes())
    done = subprocess.run([sys.executable, "-m", "hloscan", "parse", "-"], input=data, capture_output=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert b"module jit_train_step" in done.stdout


def test_json_output_has_no_lone_surrogates_for_non_utf8_file_names(tmp_path: Path) -> None:
    """18: a file name that is not UTF-8 put lone surrogates into JSON, which strict parsers reject."""
    name = os.fsdecode(b"bad\xffname.hlo.txt")
    (tmp_path / name).write_bytes(DEMO.read_bytes())
    done = subprocess.run([sys.executable, "-m", "hloscan", "check", "--format", "json", str(tmp_path)],
                          capture_output=True, timeout=120, cwd=REPO)
    text = done.stdout.decode("utf-8")  # strict
    assert "\\udc" not in text
    import json
    path = json.loads(text)["files"][0]["path"]
    path.encode("utf-8")  # no surrogate left
    assert path.endswith("name.hlo.txt")


# ------------------------------------------------------------------------------------------ 27, 28


def test_statistics_count_findings_per_rule() -> None:
    done = hloscan("check", "--statistics", str(REPO / "fixtures" / "checks" / "HLO101"))
    rows = [line.split() for line in done.stdout.splitlines()[:-1]]
    assert done.returncode == 1 and rows and all(r[0].isdigit() for r in rows)
    counts = {r[1]: int(r[0]) for r in rows}
    full = hloscan("check", "--format", "json", str(REPO / "fixtures" / "checks" / "HLO101")).stdout
    import json
    findings = json.loads(full)["findings"]
    assert counts == {c: sum(1 for f in findings if f["code"] == c) for c in {f["code"] for f in findings}}


def test_concise_format_is_one_line_per_finding() -> None:
    done = hloscan("check", "--format", "concise", str(DEMO))
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{DEMO.relative_to(REPO)}:15:3: HLO101 error [E1200] ") or ":15:3: HLO101 error" in line


def test_gitlab_code_quality_report() -> None:
    import json
    done = hloscan("check", "--format", "gitlab", str(DEMO))
    (issue,) = json.loads(done.stdout)
    assert issue["check_name"] == "HLO101" and issue["severity"] == "critical"
    assert issue["location"]["lines"]["begin"] == 15 and len(issue["fingerprint"]) == 32


def test_junit_report_parses_and_escapes_dump_text(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET
    tricky = tmp_path / "a<b>&c.hlo.txt"
    tricky.write_bytes(DEMO.read_bytes())
    done = hloscan("check", "--format", "junit", str(tricky), str(REPO / "fixtures" / "demo" / "bad.hlo"))
    suite = ET.fromstring(done.stdout.split("?>", 1)[1])
    assert suite.get("tests") == "2"
    names = [c.get("name") for c in suite.iter("testcase")]
    assert str(tricky) in names
    assert {f.get("type") for f in suite.iter("failure")} == {"HLO101"}
    assert [e.get("type") for e in suite.iter("error")] == ["HLO001"]


# ------------------------------------------------------------------------------------------ 23: Python API


def test_the_api_refuses_a_select_that_runs_no_check_as_the_cli_does() -> None:
    import hloscan
    with pytest.raises(ValueError, match="matches no check"):
        hloscan.check(DEMO.read_text(), select=["HLO001"])


def test_findings_read_and_print_as_the_cli_prints_them() -> None:
    import hloscan
    (finding,) = hloscan.check(str(DEMO))
    assert str(finding.severity) == "error"
    assert (finding.path, finding.line, finding.col) == (str(DEMO), 15, 3)
    text = finding.render()
    assert text.startswith(f"{DEMO}:15:3: HLO101 error [E1200]: ") and "hint:" in text
    assert str(finding) == text


def test_reprs_summarise_instead_of_printing_the_whole_ir() -> None:
    import hloscan
    (module,) = hloscan.load(str(DEMO))
    assert repr(module).startswith("<Module jit_train_step: 1 computations, 10 instructions")
    assert len(repr(module)) < 200 and len(repr(module.entry)) < 200


def test_graph_colours_a_move_back_to_device_as_device(tmp_path: Path) -> None:
    """10: annotate_device_placement to device was coloured as a host node."""
    hlo = tmp_path / "annot.hlo.txt"
    hlo.write_text(
        "HloModule jit_f, entry_computation_layout={(f32[16,128]{1,0})->f32[16,128]{1,0}}\n\nENTRY main.1 {\n"
        "  a = f32[16,128]{1,0} parameter(0)\n"
        "  h = f32[16,128]{1,0} custom-call(a), custom_call_target=\"annotate_device_placement\", "
        "custom_call_has_side_effect=true, frontend_attributes={_xla_buffer_placement=\"pinned_host\"}\n"
        "  d = f32[16,128]{1,0} custom-call(h), custom_call_target=\"annotate_device_placement\", "
        "custom_call_has_side_effect=true, frontend_attributes={_xla_buffer_placement=\"device\"}\n"
        "  ROOT n = f32[16,128]{1,0} negate(d)\n}\n")
    out = tmp_path / "g.dot"
    assert hloscan("graph", str(hlo), "--around", "d", "-o", str(out)).returncode == 0
    dot = out.read_text()
    node = next(line for line in dot.splitlines() if 'id="main.1/d"' in line)
    assert "[device]" in node and "[host]" in next(line for line in dot.splitlines() if 'id="main.1/h"' in line)


# ------------------------------------------------------------------------------------------ 14: --module, --stage


def test_module_and_stage_choose_what_check_hbm_and_graph_look_at(tmp_path: Path) -> None:
    folder = REPO / "fixtures" / "oracle_new" / "sharded1" / "v5e__programs__dp_small_L4"
    only_after = hloscan("check", "--stage", "after_optimizations", str(folder)).stdout.splitlines()[-1]
    assert only_after.startswith("1 file(s)") and "another stage than --stage after_optimizations" in only_after
    assert hloscan("check", "--module", "nope", str(DEMO)).returncode == 2
    assert hloscan("check", "--module", "jit_*", str(DEMO)).returncode == 1
    import json
    hbm = json.loads(hloscan("hbm", "--format", "json", "--stage", "before_optimizations", str(folder)).stdout)
    assert [m["stage"] for m in hbm["modules"]] == ["before_optimizations"]
    assert hloscan("hbm", "--module", "nope", str(folder)).returncode == 2
    out = tmp_path / "g.dot"
    assert hloscan("graph", "--module", "jit_*", str(DEMO), "--finding", "1", "-o", str(out)).returncode == 0
    assert hloscan("graph", "--module", "nope", str(DEMO), "--finding", "1", "-o", str(out)).returncode == 2


def test_diff_prints_aliasing_as_xla_does_not_as_python_reprs(tmp_path: Path) -> None:
    """21: `diff` printed Python dict reprs for a changed aliasing."""
    base = ("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }, "
            "entry_computation_layout={(f32[8]{0})->f32[8]{0}}\n\nENTRY e {\n  p = f32[8]{0} parameter(0)\n"
            "  ROOT n = f32[8]{0} negate(p)\n}\n")
    old, new = tmp_path / "old.hlo.txt", tmp_path / "new.hlo.txt"
    old.write_text(base)
    new.write_text(base.replace("input_output_alias={ {}: (0, {}, may-alias) }, ", ""))
    out = hloscan("diff", str(old), str(new)).stdout
    assert "aliasing: {}: (0, {}, may-alias) -> none" in out and "'output_index'" not in out


# ------------------------------------------------------------------------------------------ 9: progress


class _Terminal:
    """A stand-in for a terminal's stderr: what was written, and isatty()."""

    def __init__(self):
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_loading_draws_the_progress_line_on_a_terminal(monkeypatch) -> None:
    from hloscan.cli.main import loading
    from hloscan.lint import scan as scan_module
    terminal = _Terminal()
    monkeypatch.setattr(scan_module.Progress, "DELAY", 0.0)
    monkeypatch.setattr(sys, "stderr", terminal)
    (loaded,) = list(loading([str(DEMO)]))
    assert loaded.ok and "parsing offload_output.hlo.txt" in terminal.text


@pytest.mark.parametrize("command", [["hbm"], ["memory"], ["parse"], ["signature"],
                                     ["graph", "--around", "tuple.3", "-o", "OUT"]])
def test_every_loading_command_reports_progress(command: list[str], monkeypatch, tmp_path: Path) -> None:
    """9: only `check` showed progress; a big dump takes seconds to read for every command."""
    from click.testing import CliRunner
    from hloscan.cli import main
    from hloscan.lint import scan as scan_module
    seen: list[str] = []
    original = scan_module.Progress.reading
    monkeypatch.setattr(scan_module.Progress, "reading",
                        lambda self, path, workers=1: (seen.append(path), original(self, path, workers))[1])
    args = [a.replace("OUT", str(tmp_path / "g.dot")) for a in command]
    CliRunner().invoke(main, [args[0], str(DEMO), *args[1:]])
    assert str(DEMO) in seen


# ------------------------------------------------------------------------------------------ 5: jax inputs


JAX_TEXT = """HloModule jit_f, entry_computation_layout={(f32[256,512]{1,0})->f32[256,512]{1,0}}

ENTRY main.1 {
  x.1 = f32[256,512]{1,0} parameter(0), sharding={replicated}
  constant.1 = f32[] constant(2)
  mul.1 = f32[256,512]{1,0} broadcast(constant.1), dimensions={}
  ROOT mul.2 = f32[256,512]{1,0} multiply(x.1, mul.1)
}
"""


class _Sharding:
    def __init__(self, kind):
        self.memory_kind = kind


class _Lowering:
    compile_args = {"in_shardings": (_Sharding("pinned_host"),)}


class _Info:
    sharding = _Sharding("device")


class FakeLowered:
    """What `jax.jit(f).lower(x)` gives for `x * 2` of an x in pinned_host (jax 0.10.2's text and attributes)."""

    __module__ = "jax._src.stages"
    _lowering = _Lowering()
    out_info = (_Info(),)

    def as_text(self, dialect=None):
        return JAX_TEXT

    def compile(self):
        raise NotImplementedError


def test_the_api_keeps_the_input_memory_kinds_of_a_jax_object() -> None:
    """5: `hloscan.check(lowered)` of a program computing on a pinned_host parameter gave [] where the CLI on
    XLA's dump of the same program warns (checked with jax 0.10.2 / libtpu: both now give HLO102 and HLO101,
    and the compiler raised E1200)."""
    import hloscan
    codes = sorted({f.code for f in hloscan.check(FakeLowered(), tpu="v5e")})
    assert "HLO102" in codes
    from hloscan.hlo.jax_input import with_host_parameters
    assert "f32[256,512]{1,0:S(5)}" in with_host_parameters(JAX_TEXT, (0,)).splitlines()[0]


def test_an_internal_error_is_one_line_and_exit_3_not_a_traceback(monkeypatch, capsys) -> None:
    # Whatever a command did not foresee (here: the HBM analysis raising) ends, at the console entry, in a
    # message naming the exception and where it came from, and exit 3, which CI can tell from findings (1)
    # and bad input (2).
    import hloscan.cli as cli
    from hloscan.cli import hbm

    def broken(*args, **kwargs):
        raise ValueError("invalid literal for int() with base 10: '1e99999'")

    def exit_with(code):
        raise SystemExit(code)

    monkeypatch.setattr(hbm, "analyze_modules", broken)
    monkeypatch.setattr(cli.os, "_exit", exit_with)
    monkeypatch.setattr(sys, "argv", ["hloscan", "hbm", str(DEMO)])
    with pytest.raises(SystemExit) as stop:
        cli.run()
    err = capsys.readouterr().err
    assert stop.value.code == 3
    assert "hloscan: internal error: ValueError: invalid literal" in err
    assert "test_trust_edges.py:" in err and "Traceback" not in err
