"""One line per finding, `path:line:col: CODE severity [XLA] message`, for grep, editors and terse CI logs."""

from __future__ import annotations

from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import neutralised


def line(f) -> str:
    xla = f" [{f.xla_error}]" if f.xla_error else ""
    return neutralised(f"{f.span.path}:{f.span.line}:{f.span.col}: {f.code} {f.severity.label}{xla} {f.message}")


def error_line(loaded) -> str:
    """An input that could not be parsed, in the same one-line form (HLO001)."""
    e = loaded.error
    return neutralised(f"{loaded.path}:{e.line}:{e.col}: {e.code} error {e.message}")


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    for loaded in result.files:
        if loaded.error is not None:
            out.write(error_line(loaded) + "\n")
    for f in result.findings:
        out.write(line(f) + "\n")
