"""Shape strings and grammar fragments parsed on their own (`bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`)."""

from __future__ import annotations

import functools

from lark.exceptions import LarkError

from hloscan.hlo.errors import HloSyntaxError, syntax_error
from hloscan.hlo.grammar import parser
from hloscan.hlo.ir import Shape
from hloscan.hlo.transform import ShapeError, shape_from_tree


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
