"""Public parsing API: text -> modules, with the fast path by default and the strict grammar on request.

Syntax errors become `HloSyntaxError` (reported as HLO001 with path:line:col, what was expected and what
was found, and the offending line with a caret). Nothing from the input is ever executed.
"""

from __future__ import annotations

import re

from hloscan.hlo.errors import HloSyntaxError, syntax_error
from hloscan.hlo.fastpath import FastPathUnsupported, parse_module_fast
from hloscan.hlo.gcpause import gc_paused
from hloscan.hlo.ir import Module
from hloscan.hlo.mlir_input import reject_mlir
from hloscan.hlo.nesting import MAX_NESTING, check_nesting
from hloscan.hlo.recognize import recognised
from hloscan.hlo.shapes import parse_fragment, parse_shape
from hloscan.hlo.values import ShapeError
from hloscan.hlo.validate import validate_module

# lit-test files hold several modules separated by a line `// -----` (--split-input-file).
_SPLIT_MARKER = re.compile(r"^[ \t]*// -----[ \t]*\r?$", re.M)
_HAS_CODE = re.compile(r"^[ \t]*(?!//)\S", re.M)


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


# The default mode (strict=None) holds texts up to this many characters to the grammar's verdict and every
# attribute-value check (as strict as XLA's parser: a hand-written module, a lit test, a small dump); bigger
# texts, which are machine-printed dumps, take the line-oriented fast path with the cheap checks only.
STRICT_AUTO_MAX_CHARS = 256 * 1024


def resolve_strict(strict: bool | None, size: int) -> bool:
    """Whether the grammar's checks are in force: True or False as asked, else chosen by size.

    In the default mode (None) a small text gets them without necessarily running the grammar: the fast path
    reads it, recognize.py confirms every part the fast path leaves unchecked is in a form the grammar accepts,
    and only a text it cannot confirm is parsed with the grammar (see parse_module's `checked`)."""
    return size <= STRICT_AUTO_MAX_CHARS if strict is None else strict


def parse_text(text: str, path: str | None = None, strict: bool | None = None) -> list[Module]:
    """Parse every module in a text. Raises HloSyntaxError at the first bad module.

    `strict`: True runs the full grammar, False the fast path (falling back to the grammar where it
    cannot go), None (the default) the strict path's verdict for texts up to STRICT_AUTO_MAX_CHARS (the fast
    path where recognize.py confirms the grammar accepts the text, else the grammar: see parse_module), else the fast
    path. Line endings are normalised first (XLA treats CR as whitespace; this keeps line numbers right
    for CRLF and lone-CR files alike).
    """
    checked = strict is None and len(text) <= STRICT_AUTO_MAX_CHARS
    strict = resolve_strict(strict, len(text))
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    chunks = split_modules(text) if "// -----" in text else [(0, text)] if _HAS_CODE.search(text) else []
    if not chunks:
        raise HloSyntaxError("no HLO module found (the input is empty or holds only comments)", 1, 1, "", path)
    with gc_paused():
        return [parse_module(chunk, path, offset, strict, checked) for offset, chunk in chunks]


def parse_module(text: str, path: str | None = None, line_offset: int = 0, strict: bool = False,
                 checked: bool = False) -> Module:
    """Parse and validate one module. `strict`: the full grammar; else the fast path (falling back to the
    grammar where it cannot go). `checked`: the grammar's verdict at the fast path's cost: the fast path's
    module when recognize.py confirms the grammar accepts all of it (it then gets the strict mode's checks),
    else the strict path's. Either way the result, or the error and its position, is the strict path's."""
    if checked:
        module = _recognised_fast(text, path, line_offset)
        if module is not None:
            if not _shallow(text):
                check_nesting(text, path, line_offset)  # as the strict path does before the grammar
            validate_module(module, text, path, thorough=True, line_offset=line_offset)
            return module
        strict = True
    module = _build_module(text, path, line_offset, strict)
    # XLA's parser also rejects semantic errors (undefined names, bad literals, ...); the checks that
    # read attribute values only run in strict mode so big dumps stay fast.
    validate_module(module, text, path, thorough=strict, line_offset=line_offset)
    return module


# Strings and comments as nesting.py's scanner skips them; then every character but a bracket.
_STRINGS_AND_COMMENTS = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+(?:"|\\?(?=\n|\Z))|/\*[\s\S]*?(?:\*/|\Z)|//[^\n]*')
_NOT_BRACKETS = re.compile(r"[^(){}\[\]]++")
_AS_PARENTHESES = str.maketrans("{[}]", "(())")


def _shallow(text: str) -> bool:
    """True when no bracket of the text is nested more than MAX_NESTING deep, decided in C-speed passes (check_nesting
    walks every bracket in Python, a quarter of a small dump's parse). Brackets of any kind are one kind, as there;
    each pass of removing `()` pairs peels one level of matched pairs, and the unmatched openers left over can add
    at most their number, so `passes + leftover openers <= MAX_NESTING` bounds the depth. False: count exactly."""
    if text.count("(") + text.count("{") + text.count("[") <= MAX_NESTING:
        return True
    brackets = _NOT_BRACKETS.sub("", _STRINGS_AND_COMMENTS.sub("", text)).translate(_AS_PARENTHESES)
    passes = 0
    while "()" in brackets:
        brackets = brackets.replace("()", "")
        passes += 1
        if passes > MAX_NESTING:
            return False
    return passes + brackets.count("(") <= MAX_NESTING


def _recognised_fast(text: str, path: str | None, line_offset: int) -> Module | None:
    """The fast path's module when every part of it is in a form the grammar accepts, else None."""
    try:
        module = parse_module_fast(text, path, line_offset)
    except (FastPathUnsupported, HloSyntaxError, RecursionError):  # a shape nested too deep: the strict path says where
        return None
    return module if recognised(module, text) else None


def _build_module(text: str, path: str | None, line_offset: int, strict: bool) -> Module:
    if not strict:
        try:
            return parse_module_fast(text, path, line_offset)
        except (FastPathUnsupported, HloSyntaxError, RecursionError):
            # Not in printer form, a bad shape string, or one nested too deep to build: the strict path reports
            # it where it stands.
            pass
    reject_mlir(text, path, line_offset)  # StableHLO from `lowered.as_text()`: say what to do instead
    check_nesting(text, path, line_offset)
    # The grammar and lark load here, on the strict path only: a big dump's fast parse never needs them.
    from lark.exceptions import LarkError

    from hloscan.hlo.strict import parse_module_strict

    try:
        return parse_module_strict(text, path, line_offset)
    except LarkError as exc:
        raise syntax_error(exc, text, path, line_offset) from None
    except ShapeError as exc:
        source = text.split("\n")[exc.line - 1] if exc.line >= 1 else ""
        raise HloSyntaxError(exc.message, exc.line + line_offset, exc.col, source, path) from None
    except RecursionError:
        raise HloSyntaxError("nesting too deep to parse", 1 + line_offset, 1, "", path) from None


__all__ = ["HloSyntaxError", "parse_fragment", "parse_module", "parse_shape", "parse_text", "split_modules",
           "check_nesting"]
