"""Typed views of raw attribute text: splitting, C-unescaping, metadata, int lists, called computations.

These run on the raw text the IR keeps, on first access. They are lenient (a malformed value gives None
or an empty result); `--strict` parsing is where syntax is enforced.
"""

from __future__ import annotations

import functools
import re
from typing import Iterator

# Structural characters and whole strings, so a split skips over quoted text in one regex step
# instead of a Python loop per character (metadata strings are most of a dump's bytes).
# A string or comment left open runs to the end of the text (as XLA's lexer would read it): otherwise every
# later quote restarted a scan to the end, quadratic on `"\"\"\"...` (found by fuzzing).
_STRUCTURE = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)|\'[^\'\\]*+(?:\\.[^\'\\]*+)*+(?:\'|\\?\Z)'
                        r'|/\*.*?(?:\*/|\Z)|[{}()\[\],]', re.S)
_ATTR_START = re.compile(r"\s*(?:/\*.*?\*/\s*)*([A-Za-z_][A-Za-z0-9_.\-]*)=", re.S)
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = frozenset("})]")

# Attributes that name computations an instruction calls (the graph, validation and analyses read these).
CALL_ATTRS = ("calls", "to_apply", "body", "condition", "true_computation", "false_computation",
              "branch_computations", "called_computations", "select", "scatter")


# The one HLO bracket scanner is the _STRUCTURE regex: every split and bracket match of HLO text below walks
# its tokens (brackets and commas outside strings and comments). The loops stay inline: split_top_level runs
# on every attribute of a dump, and a shared generator measured 3-5% slower on a whole `check` of a 48 MB dump.
# "Flat" text is split without it: brackets and braces that do not nest, no parentheses or strings, only comments without
# brackets or commas (`/*index=5*/`). Signatures and operand lists are like this; a comma in it is at the
# top level exactly when the next bracket after it opens (or none follows), so one C-level split does it.
_FLAT_CHARS = r"[^\[\]{}()\"'/]"
_FLAT = re.compile(_FLAT_CHARS + r"*+(?:(?:\[" + _FLAT_CHARS + r"*+\]|\{" + _FLAT_CHARS + r"*+\}"
                   r"|/\*[^*\[\]{}(),\"'/]*+\*/)" + _FLAT_CHARS + r"*+)*+")
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\[\]{}]*+(?:[\[{]|\Z))")


def split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets, braces, parentheses, strings and comments."""
    if _FLAT.fullmatch(text):
        return _TOP_LEVEL_COMMA.split(text)
    parts, depth, start = [], 0, 0
    for m in _STRUCTURE.finditer(text):
        ch = m.group()
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start : m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def find_top_level(text: str, token: str) -> int | None:
    """Index of the first `token` outside brackets, strings and comments, or None."""
    for start, end in _top_level_gaps(text):
        at = text.find(token, start, end)
        if at >= 0:
            return at
    return None


def _top_level_gaps(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the stretches of text at depth 0 (brackets, strings and comments excluded)."""
    pos, depth = 0, 0
    for m in _STRUCTURE.finditer(text):
        if depth == 0:
            yield pos, m.start()
        ch = m.group()
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        pos = m.end()
    if depth == 0:
        yield pos, len(text)


def closing_bracket(text: str, open_pos: int) -> int | None:
    """Index just past the bracket closing the one at `open_pos` (strings and comments skipped), or None."""
    depth = 0
    for m in _STRUCTURE.finditer(text, open_pos):
        ch = m.group()
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def strip_comments_and_space(text: str) -> str:
    """Trim whitespace and `/*...*/` comments at both ends (interior ones are part of the value)."""
    text = text.strip()
    while text.startswith("/*") and "*/" in text:
        text = text[text.index("*/") + 2 :].lstrip()
    while text.endswith("*/") and "/*" in text:
        head = text[: text.rindex("/*")].rstrip()
        if _balanced(head):
            text = head
        else:
            break
    return text


_QUOTED_OR_COMMENT = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)|\'[^\'\\]*+(?:\\.[^\'\\]*+)*+(?:\'|\\?\Z)'
                                r'|/\*.*?(?:\*/|\Z)', re.S)


def _balanced(text: str) -> bool:
    return balanced_counts(_QUOTED_OR_COMMENT.sub("", text))


def balanced_counts(text: str) -> bool:
    """Equal numbers of opening and closing braces, parentheses and brackets (strings not skipped)."""
    return text.count("{") == text.count("}") and text.count("(") == text.count(")") and text.count("[") == text.count("]")


def split_attributes(tail: str) -> Iterator[tuple[str, str]]:
    """Split an instruction's or header's attribute tail (", a=1, b={...}") into (name, raw value)."""
    name, value = None, ""
    for chunk in split_top_level(tail):
        if name is not None and _continues_mesh(value, chunk):
            value += "," + chunk
            continue
        if name is not None:
            yield name, strip_comments_and_space(value)
        m = _ATTR_START.match(chunk)
        name, value = (m.group(1), chunk[m.end() :]) if m is not None else (None, "")
    if name is not None:
        yield name, strip_comments_and_space(value)


def _continues_mesh(value: str, chunk: str) -> bool:
    """`replica_groups=mesh[...], device_ids=(...) {...}`: the device list after a mesh's top-level comma
    belongs to the mesh, not to an attribute of its own."""
    return value.lstrip().startswith("mesh[") and value.rstrip().endswith("]") and \
        chunk.lstrip().startswith("device_ids=")


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "?": "?", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.S)


def unquote(text: str | None) -> str | None:
    """Undo XLA's C escaping of a quoted string ("a\\"b" -> a"b). Octal bytes are decoded as UTF-8."""
    if text is None:
        return None
    text = text.strip()
    if len(text) < 2 or text[0] not in "\"'" or text[-1] != text[0]:
        return text
    body = text[1:-1]
    if "\\" not in body:
        return body
    raw = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        raw += body[pos : m.start()].encode("utf-8")
        esc = m.group(1)
        if esc[0] == "x":
            raw.append(int(esc[1:], 16))
        elif esc[0] in "01234567":
            raw.append(int(esc, 8) & 0xFF)
        else:
            raw += _ESCAPES.get(esc, esc).encode("utf-8")
        pos = m.end()
    raw += body[pos:].encode("utf-8")
    return raw.decode("utf-8", errors="replace")


_SUBATTR = re.compile(r'([A-Za-z_][A-Za-z0-9_.\-]*)=("[^"\\]*+(?:\\.[^"\\]*+)*+"|\{[^{}]*\}|[^\s,}]+)')


@functools.lru_cache(maxsize=65536)
def parse_subattrs(raw: str) -> dict[str, str]:
    """`{op_name="a" source_line=3}` -> {"op_name": '"a"', "source_line": "3"} (values stay raw)."""
    inner = raw.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    return {m.group(1): m.group(2) for m in _SUBATTR.finditer(inner)}


def parse_metadata(raw: str | None) -> dict[str, str | int]:
    """Metadata fields with strings unescaped and numbers as ints."""
    if not raw:
        return {}
    out: dict[str, str | int] = {}
    for key, value in parse_subattrs(raw).items():
        if value.startswith('"'):
            out[key] = unquote(value) or ""
        else:
            try:
                out[key] = int(value)
            except ValueError:
                out[key] = value
    return out


def parse_int_list(raw: str | None) -> list[int] | None:
    """`{1,0}` -> [1, 0]; None when the value is not a flat int list."""
    if raw is None:
        return None
    inner = raw.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        try:
            return [int(inner)]
        except ValueError:
            return None
    inner = inner[1:-1].strip()
    if not inner:
        return []
    try:
        return [int(x) for x in inner.split(",")]
    except ValueError:
        return None


# An instruction or computation name as XLA's lexer reads it (the fast path, the strict builder and this module).
NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_NAME = re.compile(r"%?(" + NAME + ")")


def parse_name_list(raw: str | None) -> list[str]:
    """`{%a, %b}` or `%a` -> ["a", "b"]. Inline bodies (full-bodies print modes) give no names."""
    if not raw:
        return []
    text = raw.strip()
    if text.startswith("{"):
        inner = text[1:-1]
        if "=" in inner:  # an inline computation body, not a list of names
            return []
        return [m.group(1) for part in split_top_level(inner) if (m := _NAME.fullmatch(part.strip()))]
    m = _NAME.fullmatch(text)
    return [m.group(1)] if m else []


def parse_frontend_attributes(raw: str | None) -> dict[str, str]:
    """`{a="x",b={json}}` -> {"a": "x", "b": "{json}"} (strings unescaped, blobs kept raw)."""
    if not raw:
        return {}
    inner = raw.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    out = {}
    for key, value in split_attributes(inner):
        out[key] = unquote(value) if value.startswith('"') else value
    return out


