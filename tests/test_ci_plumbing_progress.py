"""Progress for one large file: the line names the file being parsed and its size, not only a file count."""

from __future__ import annotations

import io
import time

from hloscan.lint import scan as scan_module


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_names_the_big_file_being_parsed(tmp_path, monkeypatch):
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 3_000_000)
    monkeypatch.setattr(scan_module.Progress, "DELAY", 0.0)
    monkeypatch.setattr(scan_module.Progress, "TICK", 0.01)
    stream = FakeTerminal()
    bar = scan_module.Progress(1, stream)
    bar.reading(str(big))
    time.sleep(0.2)  # the file is still being parsed: the ticker draws without waiting for it
    shown = stream.getvalue()
    bar.advance()
    bar.close()
    assert "0/1 files, parsing big.txt (3 MB)" in shown
    assert stream.getvalue().endswith("\r\033[K")  # the line is cleared at the end


def test_no_progress_when_not_a_terminal():
    stream = io.StringIO()
    bar = scan_module.Progress(1, stream)
    bar.reading("x.txt")
    bar.advance()
    bar.close()
    assert stream.getvalue() == ""
