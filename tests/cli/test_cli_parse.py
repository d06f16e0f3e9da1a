"""`hloscan parse` and bad input: exit codes 0/2, the JSON shape, HLO001 with line:col and caret, no tracebacks."""

from __future__ import annotations

import gzip
import json

from click.testing import CliRunner

from hloscan.cli import main

GOOD = """HloModule m, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}
"""


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write(tmp_path, name: str, data: str | bytes):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def test_parse_json_shape(tmp_path):
    result = run("parse", "--format", "json", write(tmp_path, "good.hlo.txt", GOOD))
    assert result.exit_code == 0
    (doc,) = json.loads(result.output)["files"]  # one document for the whole run
    assert doc["ok"] is True and doc["error"] is None
    (module,) = doc["modules"]
    assert module == {"name": "m", "computations": 1, "instructions": 2,
                      "entry": {"parameters": ["f32[8]{0}"], "result": "f32[8]{0}"}}


def test_syntax_error_reports_line_col_caret_and_other_files_still_parse(tmp_path):
    bad = write(tmp_path, "bad.hlo.txt", GOOD.replace("negate(%p)", "negate(%p"))
    good = write(tmp_path, "good.hlo.txt", GOOD)
    result = run("parse", bad, good)
    assert result.exit_code == 2
    # Like XLA, the missing `)` is noticed at the next token: the `}` on line 6.
    assert f"{bad}:6:1: HLO001 expected one of" in result.output and "found '}'" in result.output
    assert "\n  }\n  ^" in result.output
    assert "module m: 1 computation(s), 2 instruction(s)" in result.output
    assert "Traceback" not in result.output


def test_json_error_object(tmp_path):
    result = run("parse", "--format", "json", write(tmp_path, "bad.hlo.txt", "HloModule m\n\nENTRY e {\n  x = f32[ parameter(0)\n}\n"))
    (doc,) = json.loads(result.output)["files"]
    assert result.exit_code == 2 and doc["ok"] is False
    assert doc["error"]["line"] == 4 and doc["error"]["col"] >= 1 and doc["error"]["message"]


def test_strict_mode_rejects_bad_attribute_the_fast_path_leaves_lazy(tmp_path):
    text = GOOD.replace("negate(%p)", "negate(%p), window={size=3x3 ???}")
    path = write(tmp_path, "lazy.hlo.txt", text)
    assert run("parse", "--fast", path).exit_code == 0
    strict = run("parse", "--strict", path)
    assert strict.exit_code == 2 and ":5:" in strict.output
    default = run("parse", path)  # a small file: the default mode is strict
    assert default.exit_code == 2 and ":5:" in default.output


def test_empty_file(tmp_path):
    result = run("parse", write(tmp_path, "empty.hlo.txt", ""))
    assert result.exit_code == 2 and "no HLO module found" in result.output


def test_binary_file(tmp_path):
    result = run("parse", write(tmp_path, "bin.hlo.txt", b"HloModule m\n\x00\x01\x02"))
    assert result.exit_code == 2 and ":2:1: HLO001 binary data" in result.output


def test_non_utf8_bytes(tmp_path):
    result = run("parse", write(tmp_path, "latin.hlo.txt", GOOD.encode().replace(b"%n", b"%\xe9")))
    assert result.exit_code == 2 and ":5:" in result.output and "invalid UTF-8 byte 0xe9" in result.output


def test_truncated_dump(tmp_path):
    result = run("parse", write(tmp_path, "cut.hlo.txt", GOOD[: GOOD.index("negate") + 4]))
    assert result.exit_code == 2 and "found end of input" in result.output


def test_ten_megabyte_single_line(tmp_path):
    line = "HloModule m, frontend_attributes={a=\"" + "x" * 10_000_000 + "\"}"
    result = run("parse", write(tmp_path, "long.hlo.txt", line))
    assert result.exit_code == 2 and "HLO001" in result.output
    assert len(result.output) < 2000  # the excerpt is cut around the column, not the whole line


def test_gzip_input_and_folder_input(tmp_path):
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "module_0001.m.before_optimizations.txt").write_text(GOOD)
    (tmp_path / "dump" / "module_0001.m.after_optimizations-buffer-assignment.txt").write_text("not hlo")
    with gzip.open(tmp_path / "dump" / "module_0002.m.after_optimizations.txt.gz", "wt") as handle:
        handle.write(GOOD)
    result = run("parse", str(tmp_path / "dump"))
    assert result.exit_code == 0
    assert result.output.count("module m:") == 2
    assert "buffer-assignment.txt: skipped" in result.output


def test_crlf_and_lone_cr_line_numbers(tmp_path):
    for name, eol in (("crlf.hlo", "\r\n"), ("cr.hlo", "\r")):
        text = GOOD.replace("negate(%p)", "negate(%p").replace("\n", eol)
        result = run("parse", write(tmp_path, name, text))
        assert result.exit_code == 2 and f"{name}:6:1:" in result.output


def test_lit_test_file_with_several_modules(tmp_path):
    text = GOOD + "\n// -----\n\n" + GOOD.replace("HloModule m", "HloModule m2") + "// -----\n" + GOOD.replace("negate(%p)", "negate(")
    bad_line = text.count("\n", 0, text.rindex("negate(")) + 1
    result = run("parse", write(tmp_path, "split.hlo", text))
    assert result.exit_code == 2
    # Line numbers count from the start of the file, not of the chunk.
    assert f"split.hlo:{bad_line + 1}:1:" in result.output

def test_unbalanced_attribute_continued_on_next_line_is_rejected(tmp_path):
    text = GOOD.replace("negate(%p)", "negate(%p), dimensions={1,")
    result = run("parse", write(tmp_path, "unbalanced.hlo", text))
    assert result.exit_code == 2 and "unbalanced.hlo:6:1: HLO001" in result.output


def test_python_m_entry_point():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "hloscan", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "hloscan" in proc.stdout
