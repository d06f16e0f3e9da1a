"""Byte- and token-level mutations of HLO texts, each a pure function of (data, rng) for reproducibility."""

from __future__ import annotations

import random
import re
from typing import Callable

Mutator = Callable[[bytes, random.Random], bytes]

_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[A-Za-z_%][A-Za-z0-9_.\-]*|-?\d+|->|\S')
# Places to truncate at, one pattern per position class.
_CUT_CLASSES = {
    "mid-token": rb"[A-Za-z0-9_]{2,}",
    "mid-string": rb'"[^"\n]{1,}"',
    "mid-brace": rb"\{[^{}\n]*\}",
    "after-equals": rb"=",
    "mid-paren": rb"\([^()\n]*\)",
    "mid-comment": rb"/\*.*?\*/",
}
_HUGE_NUMBERS = (b"99999999999999999999999999999999", b"-9223372036854775809", b"18446744073709551616",
                 b"1" * 5000, b"1e99999", b"0x" + b"f" * 40, b"-0", b"00000000000000000000007")
_JUNK = (b"{", b"}", b"(", b")", b"[", b"]", b'"', b"'", b"/*", b"*/", b"//", b"->", b"=", b",", b":", b"%",
         b"#", b"\\", b"<=", b"?", b"ROOT ", b"ENTRY ", b"HloModule x\n", b"// -----\n", b"\t", b"\r", b"\r\n")


def _pick_span(data: bytes, rng: random.Random, pattern: bytes) -> re.Match | None:
    matches = list(re.finditer(pattern, data[:200_000], re.S))
    return rng.choice(matches) if matches else None


def flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\x00"
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def random_byte(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes([rng.randrange(256)]) + data[i:]


def delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def truncate(data: bytes, rng: random.Random) -> bytes:
    """Cut the text inside a token, string, brace group, comment, or right after `=`."""
    kind = rng.choice(sorted(_CUT_CLASSES))
    m = _pick_span(data, rng, _CUT_CLASSES[kind])
    if m is None:
        return data[: rng.randrange(len(data) + 1)]
    return data[: rng.randrange(m.start() + 1, m.end() + 1)]


def truncate_anywhere(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def swap_tokens(data: bytes, rng: random.Random) -> bytes:
    tokens = list(_TOKEN.finditer(data[:200_000]))
    if len(tokens) < 2:
        return data
    a, b = sorted(rng.sample(tokens, 2), key=lambda m: m.start())
    if a.end() > b.start():
        return data
    return data[: a.start()] + b.group() + data[a.end() : b.start()] + a.group() + data[b.end() :]


def delete_token(data: bytes, rng: random.Random) -> bytes:
    tokens = list(_TOKEN.finditer(data[:200_000]))
    if not tokens:
        return data
    m = rng.choice(tokens)
    return data[: m.start()] + data[m.end() :]


def insert_junk(data: bytes, rng: random.Random) -> bytes:
    """Unbalanced braces, brackets and quotes, stray comments, split markers, CRs."""
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_JUNK) * rng.choice((1, 1, 2, 7)) + data[i:]


def huge_number(data: bytes, rng: random.Random) -> bytes:
    m = _pick_span(data, rng, rb"(?<![A-Za-z_])\d+")
    if m is None:
        return data
    return data[: m.start()] + rng.choice(_HUGE_NUMBERS) + data[m.end() :]


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    """Wrap a shape, brace or parenthesis group in hundreds of levels of the same bracket."""
    depth = rng.choice((50, 200, 1000, 5000))
    open_, close = rng.choice(((b"{", b"}"), (b"(", b")"), (b"[", b"]"), (b"((", b"))")))
    m = _pick_span(data, rng, rb"[({\[][^(){}\[\]\n]*[)}\]]")
    if m is None:
        return open_ * depth + data + close * depth
    return data[: m.start()] + open_ * depth + m.group() + close * depth + data[m.end() :]


def long_name(data: bytes, rng: random.Random) -> bytes:
    m = _pick_span(data, rng, rb"%[A-Za-z_][A-Za-z0-9_.\-]*")
    if m is None:
        return data + b"%" + b"n" * 100_000
    # Rename every use too (so the module stays valid), keeping the whole input under about 10 MB.
    length = min(rng.choice((1000, 100_000, 1_000_000)), 10_000_000 // (data.count(m.group()) + 1))
    return data.replace(m.group(), b"%" + b"n" * length)


def long_line(data: bytes, rng: random.Random) -> bytes:
    """Join every line into one (the text of a whole module on a single line), or pad one line hugely."""
    if rng.random() < 0.5:
        return data.replace(b"\n", b" ")
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    lines[i] = lines[i] + b" " * rng.choice((10_000, 1_000_000)) + b"/* x */"
    return b"\n".join(lines)


def nul_byte(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\x00" + data[i:]


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82")) + data[i:]


def line_endings(data: bytes, rng: random.Random) -> bytes:
    """CRLF everywhere, lone CRs everywhere, or a random mix of the two."""
    choice = rng.randrange(3)
    if choice == 0:
        return data.replace(b"\n", b"\r\n")
    if choice == 1:
        return data.replace(b"\n", b"\r")
    return b"".join(part + rng.choice((b"\n", b"\r\n", b"\r")) for part in data.split(b"\n"))


def hostile_string(data: bytes, rng: random.Random) -> bytes:
    """Put quotes, markup, escapes and format characters inside a string literal."""
    m = _pick_span(data, rng, rb'"[^"\n]*"')
    payload = rng.choice((rb'\"', b"<b>&amp;", rb"\n", b"}", b"->", b"%0A", b"::error", b"\\\\", rb"\x41\777",
                          "\u202e\u00e9\U0001f600".encode()))
    if m is None:
        return data
    return data[: m.start() + 1] + payload + data[m.start() + 1 :]


def unicode_junk(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(("\u00a0", "\u2028", "\ufeff", "\u0085", "\u3000", "ℌ")).encode() + data[i:]


MUTATORS: tuple[Mutator, ...] = (
    flip_byte, random_byte, delete_line, duplicate_line, swap_lines, truncate, truncate_anywhere, swap_tokens,
    delete_token, insert_junk, huge_number, deep_nesting, long_name, long_line, nul_byte, invalid_utf8,
    line_endings, hostile_string, unicode_junk,
)
# The mutators that can blow an input up to megabytes; the campaign uses them sparingly.
BIG_MUTATORS = frozenset({long_name, long_line, deep_nesting})


def mutate(data: bytes, rng: random.Random, rounds: int | None = None, allow_big: bool = True) -> bytes:
    """Apply one to four random mutations."""
    pool = MUTATORS if allow_big else tuple(m for m in MUTATORS if m not in BIG_MUTATORS)
    for _ in range(rounds or rng.choice((1, 1, 1, 2, 4))):
        data = rng.choice(pool)(data, rng)
    return data
