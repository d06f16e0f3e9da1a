"""The fast path's line access (fastpath._Lines): lines cut from the text on demand must be exactly those of
`text.split("\n")`, whatever order they are asked for in (the parser moves forward, steps back a line to a
computation's end, and jumps past bodies read in bulk)."""

from __future__ import annotations

import random

import pytest

from hloscan.hlo.fastpath import _Lines

TEXTS = ["", "\n", "a", "a\n", "\n\nb\n", "HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n",
         "x\ny\n\n\nz", "\n" * 5 + "last"]


@pytest.mark.parametrize("text", TEXTS)
def test_lines_in_any_order_are_those_of_split(text):
    expected = text.split("\n")
    lines = _Lines(text)
    assert len(lines) == len(expected)
    order = list(range(len(expected)))
    random.Random(len(text)).shuffle(order)
    for i in order + sorted(order) + sorted(order, reverse=True):
        assert lines[i] == expected[i]
    with pytest.raises(IndexError):
        lines[len(expected)]


@pytest.mark.parametrize("text", TEXTS)
def test_spans_and_starts(text):
    expected = text.split("\n")
    lines = _Lines(text)
    for first in range(len(expected)):
        for last in range(first, len(expected)):
            assert lines.span(first, last) == "\n".join(expected[first : last + 1])
    for index in range(len(expected)):
        assert lines.start(index) == sum(len(line) + 1 for line in expected[:index])
    assert lines.start(len(expected) + 3) == len(text)  # past the last line


def test_seek_moves_the_cursor_to_a_known_line_start():
    text = "a\nbb\nccc\ndddd"
    lines = _Lines(text)
    lines.seek(2, text.index("ccc"))
    assert lines[2] == "ccc" and lines[3] == "dddd" and lines[0] == "a"
