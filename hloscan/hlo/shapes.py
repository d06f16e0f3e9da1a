"""Shape strings and grammar fragments parsed on their own (`bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`)."""

from __future__ import annotations

import functools
import re

from hloscan.hlo.errors import HloSyntaxError, syntax_error
from hloscan.hlo.ir import Layout, Shape, Tile
from hloscan.hlo.values import ShapeError

# The grammar (and lark) is imported on first use: the fast path reads plain shapes without it.


@functools.lru_cache(maxsize=None)
def parse_shape(text: str) -> Shape:
    """Parse one shape string such as `bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`: plain array shapes and flat
    tuples of them directly (the grammar is the slow part of a parse: 0.1 s for one 17 KB tuple), the rest
    by the grammar's `shape` rule, which also says what is wrong with a bad one."""
    shape = _plain_array_shape(text) if text[:1] != "(" else _plain_tuple_shape(text)
    if shape is not None:
        return shape
    from lark.exceptions import LarkError

    from hloscan.hlo.grammar import parser
    from hloscan.hlo.transform import shape_from_tree

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
    from lark.exceptions import LarkError

    from hloscan.hlo.grammar import parser

    try:
        parser(start).parse(text)
    except LarkError as exc:
        raise syntax_error(exc, text, None) from None


# `f32[8,128]{1,0}`, `bf16[8,128]{1,0:T(8,128)(2,1)S(5)}`: the element types of the grammar's ELEMENT_TYPE that
# dumps use most, static dims without leading zeros (well inside int64), and a layout of minor-to-major with
# the tail parts TPU dumps print: tiles of plain numbers, E(n) and S(n), in XLA's order. Anything else (`*`
# tile dims, L/D/SC/P/M parts, bounded dims...) goes to the grammar.
_PLAIN_TYPES = frozenset({"pred", "bf16", "f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                          "c64", "c128"})
_PLAIN_DIM = r"(?:0|[1-9][0-9]{0,17})"
_PLAIN_LIST = _PLAIN_DIM + r"(?:," + _PLAIN_DIM + r")*"
_PLAIN_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[(" + _PLAIN_LIST + r")?\]"
                          r"(\{(" + _PLAIN_LIST + r")?(:(?:T((?:\(" + _PLAIN_LIST + r"\))+))?"
                          r"(?:E\((" + _PLAIN_DIM + r")\))?(?:S\((" + _PLAIN_DIM + r")\))?)?\})?")
_TILE = re.compile(r"\(([0-9,]+)\)")


def _plain_array_shape(text: str) -> Shape | None:
    """The Shape the grammar builds for a plain array shape, or None to let the grammar read the text (which
    also reports what is wrong with it, e.g. a layout that is not a permutation of the dimensions)."""
    m = _PLAIN_SHAPE.fullmatch(text)
    if m is None or m.group(1) not in _PLAIN_TYPES:
        return None
    element_type, dims_text, braces, order_text, tail, tiles_text, size_text, space_text = m.groups()
    dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
    layout = None
    if braces is not None:
        if order_text is None and (tail is None or dims):  # `{}` is no layout; `{:T..}` only for scalars here
            return None
        minor_to_major = tuple(int(d) for d in order_text.split(",")) if order_text else ()
        if minor_to_major and sorted(minor_to_major) != list(range(len(dims))):
            return None
        tiles = tuple(Tile(tuple(map(int, t.split(",")))) for t in _TILE.findall(tiles_text)) if tiles_text else ()
        if any(d <= 0 for tile in tiles for d in tile.dims):
            return None
        layout = Layout(minor_to_major, tiles=tiles, element_size_bits=int(size_text) if size_text else 0,
                        memory_space=int(space_text) if space_text else 0)
    return Shape(element_type, dims, (False,) * len(dims), layout)


def _plain_tuple_shape(text: str) -> Shape | None:
    """A tuple (nested or not) of plain array shapes as XLA's printer writes it,
    `((f32[8]{0:T(8)}), s32[]{:S(2)})`, or None for the grammar.

    The brackets and elements are taken as tokens and the tuple built from them; it is accepted only if it
    prints back as exactly this text, which rules out anything but well-formed printer output (missing
    commas, stray brackets, index comments out of place all print differently)."""
    levels: list[list[Shape]] = [[]]
    for token in _TUPLE_TOKENS.findall(text):
        if token == "(":
            if len(levels) > _MAX_PLAIN_TUPLE_DEPTH:  # deeper is the grammar's (which limits nesting itself)
                return None
            levels.append([])
        elif token == ")":
            if len(levels) < 2:
                return None
            elements = levels.pop()
            levels[-1].append(Shape("tuple", tuple_shapes=tuple(elements)))
        else:
            array = _plain_array_shape(token)
            if array is None:
                return None
            levels[-1].append(array)
    if len(levels) != 1 or len(levels[0]) != 1:
        return None
    shape = levels[0][0]
    return shape if shape.is_tuple and shape.to_text() == text else None


# An element: lower-case type, digits and commas, uppercase layout parts (T, E, S...): a match can only start
# at an element's type, so each match is one whole element (_plain_array_shape then reads it exactly).
_ELEMENT = r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*(?::[A-Z0-9(),]*)?\})?"
_TUPLE_TOKENS = re.compile(r"\(|\)|" + _ELEMENT)
_MAX_PLAIN_TUPLE_DEPTH = 8  # dumps nest tuples three deep at most
