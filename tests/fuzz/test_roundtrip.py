"""Generated modules print with `to_text()` and parse back, on both paths, to the same IR and the same text."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings

from hloscan.hlo.attrs import parse_frontend_attributes, parse_metadata, unquote
from hloscan.hlo.ir import Module
from hloscan.hlo.parser import parse_text

from .generate import c_escape, hostile_text, modules
from .oracle import run_input

FUZZ_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _without_positions(module: Module) -> Module:
    """The IR minus line/col (generated IR has none; parsed IR has real ones)."""
    comps = tuple(
        dataclasses.replace(c, line=0, col=0,
                            instructions=tuple(i._replace(line=0, col=0) for i in c.instructions))
        for c in module.computations
    )
    return dataclasses.replace(module, computations=comps)


@FUZZ_SETTINGS
@given(modules())
def test_print_parse_round_trip(module):
    text = module.to_text()
    for strict in (False, True):
        (parsed,) = parse_text(text, "gen.hlo", strict=strict)
        assert _without_positions(parsed) == module, f"strict={strict}\n{text}"
        assert parsed.to_text() == text


@FUZZ_SETTINGS
@given(modules())
def test_free_text_survives_escaping(module):
    """What the dump escaped, the typed views unescape to exactly the same text."""
    (parsed,) = parse_text(module.to_text(), "gen.hlo")
    for comp, inst in parsed.instructions():
        original = module.computations_by_name[comp.name].by_name[inst.name]
        assert inst.custom_call_target == original.custom_call_target
        assert parse_metadata(inst.attr("metadata")) == parse_metadata(original.attr("metadata"))
        assert parse_frontend_attributes(inst.attr("frontend_attributes")) == \
            parse_frontend_attributes(original.attr("frontend_attributes"))
        target = original.attr("custom_call_target")
        if target is not None:
            assert unquote(target) == inst.custom_call_target


@FUZZ_SETTINGS
@given(modules())
def test_generated_modules_pass_every_stage(module):
    outcome = run_input(module.to_text().encode("utf-8"))
    assert outcome.parsed, outcome.error and outcome.error.format()
    assert not outcome.failures, "\n\n".join(f"[{f.stage}] {f.detail}" for f in outcome.failures)


@FUZZ_SETTINGS
@given(hostile_text)
def test_unquote_inverts_escaping(text):
    assert unquote(c_escape(text)) == text
