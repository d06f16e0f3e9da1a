"""Public parsing API: text -> modules, with the fast path by default and the strict grammar on request.

Syntax errors become `HloSyntaxError` (reported as HLO001 with path:line:col, what was expected and what
was found, and the offending line with a caret). Nothing from the input is ever executed.
"""

from __future__ import annotations

import functools
import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .fastpath import FastPathUnsupported, parse_module_fast
from .grammar import parser
from .ir import Module, Shape
from .strict import parse_module_strict
from .transform import ShapeError, shape_from_tree
from .validate import validate_module

# lit-test files hold several modules separated by a line `// -----` (--split-input-file).
_SPLIT_MARKER = re.compile(r"^[ \t]*// -----[ \t]*\r?$", re.M)
_HAS_CODE = re.compile(r"^[ \t]*(?!//)\S", re.M)


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


@functools.lru_cache(maxsize=None)
def parse_shape(text: str) -> Shape:
    """Parse one shape string such as `bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`."""
    try:
        return shape_from_tree(parser("shape").parse(text))
    except LarkError as exc:
        raise syntax_error(exc, text, None) from None
    except ShapeError as exc:
        raise HloSyntaxError(exc.message, exc.line, exc.col, text.split("\n")[exc.line - 1]) from None


def parse_fragment(text: str, start: str) -> None:
    """Check a fragment against one of the grammar's start rules (sharding, replica_groups, ...)."""
    if start == "shape":
        parse_shape(text)
        return
    try:
        parser(start).parse(text)
    except LarkError as exc:
        raise syntax_error(exc, text, None) from None


def split_modules(text: str) -> list[tuple[int, str]]:
    """Cut a text at `// -----` lines; return (line offset, chunk) for chunks that hold code."""
    chunks = []
    start, line = 0, 0
    for m in _SPLIT_MARKER.finditer(text):
        chunks.append((line, text[start : m.start()]))
        line += text.count("\n", start, m.end())
        start = m.end()
    chunks.append((line, text[start:]))
    return [(offset, chunk) for offset, chunk in chunks if _HAS_CODE.search(chunk)]


# One-shot processes (the CLI, the benchmark) set this: after a parse, what was built is moved out of
# the collector's sight (gc.freeze) instead of being walked again by the next collections (a full
# second on a 48 MB dump). Long-lived processes leave it off, since frozen garbage cycles (networkx's
# cached views) would never be collected.
FREEZE_AFTER_BUILD = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building big acyclic structures: it otherwise rescans the growing IR
    again and again, which doubled the time to parse a 48 MB dump."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if FREEZE_AFTER_BUILD:
                gc.freeze()
            elif gc.get_freeze_count() == 0:
                _promote_to_oldest_generation()
            gc.enable()


def _promote_to_oldest_generation() -> None:
    """Move what was just built straight into the oldest GC generation.

    Left in the youngest one, the next allocation would trigger a collection that walks all of it, and
    the next one again (a second on a 48 MB dump plus its graph). freeze() + unfreeze() moves every tracked
    object to the oldest generation without walking it, so only a later full collection looks at it, as
    for any long-lived data; nothing stays frozen (callers that froze objects themselves are left alone).
    """
    gc.freeze()
    gc.unfreeze()


# The default mode (strict=None) parses texts up to this many characters with the full grammar and every
# attribute-value check (as strict as XLA's parser: a hand-written module or a lit test costs well under a
# second); bigger texts, which are machine-printed dumps, take the line-oriented fast path.
STRICT_AUTO_MAX_CHARS = 256 * 1024


def resolve_strict(strict: bool | None, size: int) -> bool:
    """The parse mode in force: True (full grammar) or False (fast path) as asked, else chosen by size."""
    return size <= STRICT_AUTO_MAX_CHARS if strict is None else strict


def parse_text(text: str, path: str | None = None, strict: bool | None = None) -> list[Module]:
    """Parse every module in a text. Raises HloSyntaxError at the first bad module.

    `strict`: True runs the full grammar, False the fast path (falling back to the grammar where it
    cannot go), None (the default) the full grammar for texts up to STRICT_AUTO_MAX_CHARS, else the fast
    path. Line endings are normalised first (XLA treats CR as whitespace; this keeps line numbers right
    for CRLF and lone-CR files alike).
    """
    strict = resolve_strict(strict, len(text))
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    chunks = split_modules(text) if "// -----" in text else [(0, text)] if _HAS_CODE.search(text) else []
    if not chunks:
        raise HloSyntaxError("no HLO module found (the input is empty or holds only comments)", 1, 1, "", path)
    with gc_paused():
        return [parse_module(chunk, path, offset, strict) for offset, chunk in chunks]


def parse_module(text: str, path: str | None = None, line_offset: int = 0, strict: bool = False) -> Module:
    module = _build_module(text, path, line_offset, strict)
    # XLA's parser also rejects semantic errors (undefined names, bad literals, ...); the checks that
    # read attribute values only run in strict mode so big dumps stay fast.
    validate_module(module, text, path, thorough=strict, line_offset=line_offset)
    return module


def _build_module(text: str, path: str | None, line_offset: int, strict: bool) -> Module:
    if not strict:
        try:
            return parse_module_fast(text, path, line_offset)
        except (FastPathUnsupported, HloSyntaxError):
            # Not in printer form, or a bad shape string: the strict path reports it where it stands.
            pass
    check_nesting(text, path, line_offset)
    try:
        return parse_module_strict(text, path, line_offset)
    except LarkError as exc:
        raise syntax_error(exc, text, path, line_offset) from None
    except ShapeError as exc:
        source = text.split("\n")[exc.line - 1] if exc.line >= 1 else ""
        raise HloSyntaxError(exc.message, exc.line + line_offset, exc.col, source, path) from None
    except RecursionError:
        raise HloSyntaxError("nesting too deep to parse", 1 + line_offset, 1, "", path) from None


# Deeper bracket nesting than any dump needs (tuple shapes, literals and JSON nest a dozen levels). Lark's
# LALR stack costs ~250 bytes per open bracket, so 1 MB of `(` took 250 MB and 4 s before failing; past
# this depth we stop early with a positioned error instead (found by fuzzing).
MAX_NESTING = 256
# Open strings and comments end at the line end or text end, so a run of open quotes stays linear.
_BRACKETS = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?:"|\\?(?=\n|\Z))|/\*[\s\S]*?(?:\*/|\Z)|//[^\n]*|[({\[]|[)}\]]')


def check_nesting(text: str, path: str | None, line_offset: int = 0) -> None:
    """Raise HLO001 at the first bracket nested deeper than MAX_NESTING (strings and comments skipped)."""
    if text.count("(") + text.count("{") + text.count("[") <= MAX_NESTING:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "({[":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                source = text.split("\n")[line - 1]
                raise HloSyntaxError(f"brackets nested more than {MAX_NESTING} deep", line + line_offset, col,
                                     source, path)
        elif ch in ")}]":
            depth = max(0, depth - 1)


# Readable names for the grammar's terminals in "expected ..." messages.
_TERMINAL_NAMES = {
    "PCT_NAME": "%name", "IDENT": "identifier", "ATTR_NAME": "attribute=", "PARAM_NAME": "name:",
    "INT": "integer", "FLOAT": "number", "STRING": "string", "SQ_STRING": "'string'",
    "ELEMENT_TYPE": "element type (f32, bf16, ...)", "LAYOUT_OPEN": "{", "BLOB": "{json}",
    "DXD": "NxM", "PAD": "low_high padding", "DIM_LABELS": "dim labels", "ARROW": "->",
    "NAN": "nan", "INF": "inf", "TRUE": "true", "FALSE": "false", "QUESTION": "?", "STAR": "*",
}


def _describe_expected(exc: UnexpectedInput, start: str) -> str:
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
