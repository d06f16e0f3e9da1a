"""Attribute values both parse paths reject before any analysis reads them (found by fuzzing: the fast path
keeps attributes as text, and `check`'s HBM and padding checks, and `hloscan hbm`, crashed on them)."""

from __future__ import annotations

import pytest

from hloscan.hlo.errors import HloSyntaxError
from hloscan.hlo.parser import parse_text
from hloscan.hlo.sharding import Sharding, parse_sharding

GTE = """HloModule m

ENTRY %main (p: (f32[4], f32[4])) -> f32[4] {
  %p = (f32[4], f32[4]) parameter(0)
  ROOT %g = f32[4] get-tuple-element(%p), index=INDEX
}
"""


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "fast"])
@pytest.mark.parametrize("index, message", [
    ("1e99999", "expects integer for attribute index, found '1e99999'"),
    ('"0"', "expects integer for attribute index"),
    ("-9223372036854775809", "expects integer for attribute index"),
    ("\u00b2", ""),  # a digit to str.isdigit, not to int() nor XLA (the grammar's lexer refuses it first)
    ("2", "tuple index 2 out of bounds for %p (2 elements)"),
])
def test_a_tuple_index_must_be_an_index_of_the_operand(index, message, strict):
    with pytest.raises(HloSyntaxError) as err:
        parse_text(GTE.replace("INDEX", index), "m.hlo", strict)
    assert message in err.value.message and err.value.line == 5


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "fast"])
def test_a_valid_tuple_index_parses(strict):
    (module,) = parse_text(GTE.replace("INDEX", "1"), "m.hlo", strict)
    assert module.entry.root.attr("index") == "1"


HEADER = """HloModule m, ATTR

ENTRY %main (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4] parameter(0)
}
"""


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "fast"])
@pytest.mark.parametrize("attr, message", [
    ("input_output_alias={ {}: (99999999999999999999999, {}, may-alias) }", "integer out of range"),
    ("input_output_alias={ {}: (0, {}, mas) }", "unknown alias kind 'mas'"),
    ("buffer_donor={ (11111111111111111111111111, {}) }", "integer out of range"),
])
def test_header_aliases_name_parameters_by_int64_numbers(attr, message, strict):
    with pytest.raises(HloSyntaxError) as err:
        parse_text(HEADER.replace("ATTR", attr), "m.hlo", strict)
    assert message in err.value.message and err.value.line == 1


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "fast"])
def test_a_scatter_needs_an_operand_indices_and_updates(strict):
    text = """HloModule m

add {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[10,5], u: f32[24,2,3]) -> f32[10,5] {
  %a = f32[10,5] parameter(0)
  %u = f32[24,2,3] parameter(1)
  ROOT %scatter = f32[10,5] scatter(%a, %u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""
    with pytest.raises(HloSyntaxError) as err:
        parse_text(text, "m.hlo", strict)
    assert err.value.line == 12


def test_a_sharding_with_a_tile_count_no_int64_holds_reads_as_unknown():
    # The strict path rejects the text; on the fast path the analyses must not crash on it.
    assert parse_sharding("{devices=[1," + "1" * 5000 + "]0}") == [Sharding("unknown")]
    assert parse_sharding("{devices=[2,1]0,1}")[0].tiles == (2, 1)
