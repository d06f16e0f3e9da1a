"""The plain shape readers (arrays with TPU-style tiled layouts, flat tuples of arrays) build exactly the Shape the grammar builds, and leave the
rest to it."""

from __future__ import annotations

import pytest

from hloscan.hlo.shapes import _plain_array_shape, _plain_tuple_shape
from hloscan.hlo.parser import HloSyntaxError, parse_shape

PLAIN = ["f32[]", "pred[]", "bf16[8,128]{1,0}", "s32[0]{0}", "u8[3,4,5]{0,2,1}", "f64[7]", "c64[2,2]{0,1}",
         "s64[123456789012345678]{0}", "bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}", "f32[8,128]{1,0:T(8,128)S(5)}",
         "f32[]{:T(256)}", "f32[8]{0:}", "s8[4]{0:T(512)E(8)}", "pred[8]{0:T(1024)(128)(4,1)E(32)}",
         "f32[8,2]{0,1:T(8,128)(2,1)S(1)}", "f32[8]{0:S(5)}"]
# Not plain: the grammar reads them (or reports what is wrong, with a position).
OTHER = ["f32[]{}", "f32[01]", "f32[1,2]{0,0}", "f32[3]{1}", "f32[1,]", "s32[9999999999999999999]",
         "f32[<=4]", "f32[?]", "token[]", "(f32[], s32[])", "f8e4m3fn[2]{0}", "f32[8]{0:T(0)}", "f32[2]{0:T(2)L(4)}",
         "f32[8]{:T(8)}", "f32[8]{0:T(*,128)}", "f32[8,2]{0:T(8)}", "f32[8]{0:S(05)}"]


@pytest.mark.parametrize("text", PLAIN)
def test_plain_shapes_equal_the_grammar(text):
    assert _plain_array_shape(text) == parse_shape(text)


@pytest.mark.parametrize("text", OTHER)
def test_other_shapes_go_to_the_grammar(text):
    assert _plain_array_shape(text) is None
    try:
        parse_shape(text)
    except HloSyntaxError as exc:
        assert exc.line >= 1 and exc.col >= 1


def _grammar(text: str):
    from hloscan.hlo.grammar import parser
    from hloscan.hlo.transform import shape_from_tree

    return shape_from_tree(parser("shape").parse(text))


TUPLES = ["()", "(f32[8]{0})", "(bf16[2,3]{0,1}, pred[], u8[4])",
          "(f32[1], f32[2], f32[3], f32[4], f32[5], /*index=5*/s32[])",
          "(bf16[4,128]{1,0:T(8,128)(2,1)S(1)}, f32[256]{0:T(256)})",
          "((f32[256,1024]{1,0:T(8,128)}), f32[64,1024]{1,0:T(8,128)S(1)}, s32[]{:S(2)})", "((), (f32[1], (s8[2])))"]
# Nested, non-plain elements, bad layouts and leading zeros: the grammar's.
NOT_PLAIN_TUPLES = ["(f32[8]{0,1})", "(f32[08])", "(u4[8])", "(f32[8]{0}, s32[]){x}", "(f32[8]{0:T(*,8)})",
                    "(f32[8]{0}, /*index=5*/s32[])", "(f32[8]{0} s32[])", "((f32[8]{0})", "(f32[8]{0}))", "(f32[8]{0},)",
                    "(f32[8]{0})(s32[])"]


@pytest.mark.parametrize("text", PLAIN + TUPLES)
def test_plain_readers_build_what_the_grammar_builds(text):
    fast = _plain_tuple_shape(text) if text.startswith("(") else _plain_array_shape(text)
    assert fast is not None and fast == _grammar(text) == parse_shape(text)


@pytest.mark.parametrize("text", NOT_PLAIN_TUPLES)
def test_other_tuples_go_to_the_grammar(text):
    assert _plain_tuple_shape(text) is None
