"""HLO001: the one positioned syntax error every parse path raises, with an excerpt of the offending line
(lark's exceptions.py idea), and the translation of lark's exceptions into it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # lark is imported where a grammar error is translated: the fast path never loads it
    from lark.exceptions import LarkError, UnexpectedInput


@dataclass
class HloSyntaxError(Exception):
    """A parse failure at a 1-based line and column."""

    message: str
    line: int = 1
    col: int = 1
    source_line: str = ""
    path: str | None = None
    code: str = "HLO001"

    def __str__(self) -> str:
        return self.format()

    def format(self) -> str:
        where = f"{self.path or '<input>'}:{self.line}:{self.col}"
        text = f"{where}: {self.code} {self.message}"
        if self.source_line:
            shown, caret = _excerpt(self.source_line, self.col)
            text += f"\n  {shown}\n  {caret}"
        return text


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _excerpt(line: str, col: int, width: int = 120) -> tuple[str, str]:
    """The offending line (cut around the column when it is long) and a caret under the column."""
    # Control characters from the input would be obeyed by the terminal: show them as `?`.
    line = _CONTROL_CHARS.sub("?", line.replace("\t", " "))
    start = max(0, col - 1 - width // 2) if len(line) > width else 0
    shown = line[start : start + width]
    prefix = "..." if start else ""
    suffix = "..." if start + width < len(line) else ""
    caret = " " * (len(prefix) + col - 1 - start) + "^"
    return prefix + shown + suffix, caret


# Readable names for the grammar's terminals in "expected ..." messages.
_TERMINAL_NAMES = {
    "PCT_NAME": "%name", "IDENT": "identifier", "ATTR_NAME": "attribute=", "PARAM_NAME": "name:",
    "INT": "integer", "FLOAT": "number", "STRING": "string", "SQ_STRING": "'string'",
    "ELEMENT_TYPE": "element type (f32, bf16, ...)", "LAYOUT_OPEN": "{", "BLOB": "{json}",
    "DXD": "NxM", "PAD": "low_high padding", "DIM_LABELS": "dim labels", "ARROW": "->",
    "NAN": "nan", "INF": "inf", "TRUE": "true", "FALSE": "false", "QUESTION": "?", "STAR": "*",
}


def _describe_expected(exc: UnexpectedInput, start: str) -> str:
    from hloscan.hlo.grammar import parser

    expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or set()
    terminals = {t.name: t for t in parser(start).terminals}
    names = []
    for name in sorted(expected):
        if name in _TERMINAL_NAMES:
            names.append(_TERMINAL_NAMES[name])
            continue
        term = terminals.get(name)
        pattern = getattr(term, "pattern", None)
        if pattern is not None and pattern.type == "str":
            names.append(repr(pattern.value))
        else:
            names.append(name.lower())
    names = sorted(set(names))
    if not names:
        return ""
    if len(names) > 8:
        names = names[:8] + ["..."]
    return "expected " + (names[0] if len(names) == 1 else "one of " + ", ".join(names))


def syntax_error(exc: LarkError, text: str, path: str | None, line_offset: int = 0,
                 start: str = "hlo_text") -> HloSyntaxError:
    """Turn a lark exception into an HLO001 error with line, column, expectation and the line itself."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    if isinstance(exc, UnexpectedInput):
        line = getattr(exc, "line", None)
        col = getattr(exc, "column", None)
        if isinstance(exc, UnexpectedEOF) or line in (None, -1):
            line = text.count("\n") + 1
            col = len(text.rsplit("\n", 1)[-1]) + 1
            found = "end of input"
        elif isinstance(exc, UnexpectedToken):
            found = "end of input" if exc.token.type == "$END" else repr(_short(str(exc.token)))
        elif isinstance(exc, UnexpectedCharacters):
            found = repr(_short(text[exc.pos_in_stream : exc.pos_in_stream + 12]))
        else:
            found = "unexpected input"
        expected = _describe_expected(exc, start)
        message = f"{expected}, found {found}" if expected else f"unexpected {found}"
        lines = text.split("\n")
        source = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
        return HloSyntaxError(message, line + line_offset, col, source, path)
    return HloSyntaxError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 1 + line_offset, 1, "", path)


def _short(text: str, limit: int = 40) -> str:
    text = text.split("\n", 1)[0]
    return text if len(text) <= limit else text[:limit] + "..."
