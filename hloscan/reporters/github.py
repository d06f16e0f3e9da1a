"""GitHub Actions workflow commands (`::error file=...::message`), one per finding, escaped per GitHub's rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import neutralised
from hloscan.lint.finding import Finding, Severity

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(text: str) -> str:
    """The message part: `%`, CR and LF are percent-encoded (the runner's escapeData); other control and
    line-separator characters from a dump are shown as escapes, so an annotation stays one line."""
    return neutralised(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A property value: as data, plus `:` and `,` which would end the property (escapeProperty)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(path: str) -> str:
    """Annotations resolve files against the repository checkout, so make paths relative to it when possible."""
    root = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return path


def command(kind: str, file: str, line: int, col: int | None, title: str, text: str) -> str:
    props = [f"file={escape_property(workspace_path(file))}", f"line={line}"]
    if col:
        props.append(f"col={col}")
    props.append(f"title={escape_property(title)}")
    return f"::{kind} {','.join(props)}::{escape_data(text)}"


def _checked_out(file: str) -> bool:
    """Whether a Python file named in the metadata is in this checkout (dumps made elsewhere name other
    machines' paths, and jax writes "-" or "<...>" for code without a file)."""
    if not file or file == "-" or file.startswith("<"):
        return False
    root = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    return (root / workspace_path(file)).is_file()


def annotation(f: Finding) -> str:
    """Point at the user's Python line when it is in the checkout; the other location goes in the text."""
    lines = [f.message]
    if f.source is not None and _checked_out(f.source.file):
        lines.append(f"HLO: {f.span}" + (f" ({f.instruction})" if f.instruction else ""))
        file, line, col = f.source.file, f.source.line, None
    else:
        if f.source is not None:
            lines.append(f"Python: {f.source}")
        file, line, col = f.span.path, f.span.line, f.span.col
    if f.hint:
        lines.append(f"hint: {f.hint}")
    lines.append(f"Details: hloscan rule {f.code}")
    return command(COMMANDS[f.severity], file, line, col, f.code, "\n".join(lines))


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    for loaded in result.files:
        if loaded.error is not None:
            err = loaded.error
            out.write(command("error", loaded.path, err.line, err.col, err.code, err.message) + "\n")
    for f in result.findings:
        out.write(annotation(f) + "\n")
