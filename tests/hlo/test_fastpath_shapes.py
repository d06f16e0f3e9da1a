"""The fast path's plain-array-shape reader builds exactly the Shape the grammar builds, and leaves the rest to it."""

from __future__ import annotations

import pytest

from hloscan.hlo.fastpath import _plain_array_shape
from hloscan.hlo.parser import HloSyntaxError, parse_shape

PLAIN = ["f32[]", "pred[]", "bf16[8,128]{1,0}", "s32[0]{0}", "u8[3,4,5]{0,2,1}", "f64[7]", "c64[2,2]{0,1}",
         "s64[123456789012345678]{0}"]
# Not plain: the grammar reads them (or reports what is wrong, with a position).
OTHER = ["f32[]{}", "f32[01]", "f32[1,2]{0,0}", "f32[3]{1}", "f32[1,]", "s32[9999999999999999999]",
         "f32[8]{0:T(8)}", "f32[<=4]", "f32[?]", "token[]", "(f32[], s32[])", "f8e4m3fn[2]{0}"]


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
