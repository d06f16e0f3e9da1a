"""Shape strings and grammar fragments parsed on their own (`bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`)."""

from __future__ import annotations

import functools
import re

from hloscan.hlo.errors import HloSyntaxError, syntax_error
from hloscan.hlo.ir import Layout, Shape
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


# `f32[8,128]{1,0}`: the element types of the grammar's ELEMENT_TYPE that dumps use most, static dims without
# leading zeros (well inside int64) and a bare minor-to-major layout. Anything else goes to the grammar.
_PLAIN_TYPES = frozenset({"pred", "bf16", "f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                          "c64", "c128"})
_PLAIN_DIM = r"(?:0|[1-9][0-9]{0,17})"
_PLAIN_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[((?:" + _PLAIN_DIM + r")(?:," + _PLAIN_DIM + r")*)?\]"
                          r"(?:\{(" + _PLAIN_DIM + r"(?:," + _PLAIN_DIM + r")*)\})?")


def _plain_array_shape(text: str) -> Shape | None:
    """The Shape the grammar builds for a plain array shape, or None to let the grammar read the text (which
    also reports what is wrong with it, e.g. a layout that is not a permutation of the dimensions)."""
    m = _PLAIN_SHAPE.fullmatch(text)
    if m is None or m.group(1) not in _PLAIN_TYPES:
        return None
    element_type, dims_text, layout_text = m.groups()
    dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
    layout = None
    if layout_text is not None:
        minor_to_major = tuple(int(d) for d in layout_text.split(","))
        if sorted(minor_to_major) != list(range(len(dims))):
            return None
        layout = Layout(minor_to_major)
    return Shape(element_type, dims, (False,) * len(dims), layout)


def _plain_tuple_shape(text: str) -> Shape | None:
    """A flat tuple of plain array shapes, `(f32[8]{0}, /*index=5*/s32[])`, or None for the grammar."""
    if _PLAIN_TUPLE.fullmatch(text) is None:
        return None
    # Inside the brackets there are only digits and commas, so each match is one whole element.
    elements = [_plain_array_shape(element) for element in _TUPLE_ELEMENTS.findall(text)]
    if None in elements:
        return None
    return Shape("tuple", tuple_shapes=tuple(elements))


_PLAIN_ELEMENT = r"[ \t]*(?:/\*index=\d+\*/)?[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*\})?[ \t]*"
_PLAIN_TUPLE = re.compile(r"\((?:" + _PLAIN_ELEMENT + r"(?:," + _PLAIN_ELEMENT + r")*)?\)")
_TUPLE_ELEMENTS = re.compile(r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*\})?")
