"""The default mode on small texts: the fast path plus recognize.py, with the strict path's verdict.

Every outcome must be the strict path's: the same error at the same line:col with the same message, or the same
IR. And the common valid small dump must not need the full grammar (that is the point of the mode).
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from hloscan.hlo.fastpath import FastPathUnsupported, parse_module_fast
from hloscan.hlo.parser import HloSyntaxError, parse_text
from hloscan.hlo.recognize import recognised

from corpus import CORPUS, REPO, hlo_files, require_path

INVALID = CORPUS / "xla-parser-invalid"

# Measured: the default mode rejects 63 of the 115 invalid texts without running the grammar (the fast path reads
# them and validation rejects them); the other 52 are texts the fast path does not read or whose values
# recognize.py cannot confirm, which the grammar then rejects.
MIN_REJECTED_WITHOUT_GRAMMAR = 63


def _cases() -> list[str]:
    if not (INVALID / "MANIFEST.tsv").exists():
        return []
    lines = (INVALID / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[0] for line in lines[1:] if line]


def _outcome(text: str, strict: bool | None):
    try:
        modules = parse_text(text, "case.hlo", strict=strict)
    except HloSyntaxError as exc:
        return ("error", exc.line, exc.col, exc.message)
    return ("ok", modules, [[inst.attrs for _, inst in m.instructions()] for m in modules])


@pytest.mark.parametrize("name", _cases())
def test_invalid_case_rejected_where_strict_rejects_it(name):
    text = (require_path(INVALID) / name).read_text(encoding="utf-8")
    default, strict = _outcome(text, None), _outcome(text, True)
    assert default[0] == strict[0], name
    if strict[0] == "error":
        assert default == strict  # same line, column and message
        assert default[1] >= 1 and default[2] >= 1


def test_invalid_cases_mostly_decided_without_the_grammar(monkeypatch):
    import hloscan.hlo.strict as strict_module

    cases = _cases()
    require_path(INVALID)
    calls: list[int] = []
    real = strict_module.parse_module_strict

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(strict_module, "parse_module_strict", counting)
    without = 0
    for name in cases:
        calls.clear()
        if _outcome((INVALID / name).read_text(encoding="utf-8"), None)[0] == "error" and not calls:
            without += 1
    assert without >= MIN_REJECTED_WITHOUT_GRAMMAR


# A Pallas kernel dump from jax (backend_config JSON over several lines), a TPU after-optimizations dump, and
# XLA parser-test texts with tuples, layouts and metadata.
_COMMON = ["tpu-oracle", "xla-parser"]


def test_common_small_dumps_do_not_need_the_full_grammar():
    files = [str(p) for folder in _COMMON for p in hlo_files(folder) if p.stat().st_size < 256 * 1024][::25]
    script = (
        "import sys\n"
        "from hloscan.hlo.parser import parse_text\n"
        "for path in sys.argv[1:]:\n"
        "    parse_text(open(path, encoding='utf-8').read(), path)\n"
        "print('hloscan.hlo.strict' in sys.modules)\n"
    )
    # Only texts the fast path reads: those it does not read go to the grammar by design.
    readable = []
    for path in files:
        text = open(path, encoding="utf-8").read()
        try:
            module = parse_module_fast(text, path)
        except Exception:  # noqa: BLE001 - not in the fast path's form: counted elsewhere
            continue
        if recognised(module, text):
            readable.append(path)
    assert len(readable) >= 0.8 * len(files), f"only {len(readable)} of {len(files)} read without the grammar"
    out = subprocess.run([sys.executable, "-c", script, *readable], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert out.strip() == "False"


_MUTATIONS = list('{}()[],=:%"#/*-_x. 0123456789abfT<>') + [
    "true", "nan", "f32", "ROOT", "{}", "/*index=5*/", "\n", "metadata=", "->", ", a=1", "'", "\\"]


def _mutants(count: int, seed: int) -> list[str]:
    files = [p for folder in ("xla-parser", "tpu-oracle") for p in hlo_files(folder) if p.stat().st_size < 20000]
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        text = rnd.choice(files).read_text(encoding="utf-8")
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(text))
            r = rnd.random()
            if r < 0.4:
                text = text[:i] + text[i + 1 :]
            elif r < 0.8:
                text = text[:i] + rnd.choice(_MUTATIONS) + text[i:]
            else:
                text = text[:i] + text[i + rnd.randint(1, 8) :]
        out.append(text)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_mutated_corpus_texts_get_the_strict_outcome(seed):
    mismatches = []
    for k, text in enumerate(_mutants(250, seed)):
        default, strict = _outcome(text, None), _outcome(text, True)
        same = default[0] == strict[0] and (default == strict if default[0] == "error"
                                             else default[1] == strict[1] and default[2] == strict[2])
        if not same:
            mismatches.append((k, default[:4] if default[0] == "error" else "ok",
                               strict[:4] if strict[0] == "error" else "ok"))
    assert mismatches == []


# recognize.py on its own: values the fast path keeps raw, in forms the grammar rejects (the corpus's invalid
# texts the fast path used to accept) and in forms it accepts.
_HEADER = "HloModule m{}\n\nENTRY e {{\n  p = f32[] parameter(0)\n  ROOT c = f32[] constant({})\n}}\n"
REJECTED_HEADERS = [", input_output_alias={ {0}: (a, {}) }", ", input_output_alias={ {0} (0, {}) }",
                    ", input_output_alias={ {0}: (0, {}), : (1, {}) }", ", buffer_donor={ (a, {}) }",
                    ", buffer_donor={ (0, {a}) }", ", input_output_alias={ {0}: (0, {}, f32) }",
                    ", entry_computation_layout={(f32[])->f32[]{5}}"]
ACCEPTED_HEADERS = ["", ", input_output_alias={ {0}: (0, {}, may-alias) }", ", buffer_donor={ (0, {}) }",
                    ", entry_computation_layout={(f32[])->f32[]}", ", frontend_attributes={a=\"b\",c={\"d\":1}}",
                    ", is_scheduled=true, num_partitions=2"]
REJECTED_LITERALS = ["{1,}", "1 2", "{{1},{2}", "0x10", "(1)", "1.5.2", "nan(x)"]
ACCEPTED_LITERALS = ["1", "-2.5e3", "nan", "-inf", "{...}", "true", "/*x*/ 1"]


def _recognises(text: str) -> bool:
    try:
        module = parse_module_fast(text)
    except (FastPathUnsupported, HloSyntaxError):
        return False  # the fast path leaves it to the grammar already
    return recognised(module, text)


@pytest.mark.parametrize("header", REJECTED_HEADERS)
def test_recogniser_refuses_bad_header_values(header):
    assert not _recognises(_HEADER.format(header, "1"))


@pytest.mark.parametrize("header", ACCEPTED_HEADERS)
def test_recogniser_takes_good_header_values(header):
    assert _recognises(_HEADER.format(header, "1"))


@pytest.mark.parametrize("literal", REJECTED_LITERALS)
def test_recogniser_refuses_bad_literals(literal):
    assert not _recognises(_HEADER.format("", literal))


@pytest.mark.parametrize("literal", ACCEPTED_LITERALS)
def test_recogniser_takes_good_literals(literal):
    assert _recognises(_HEADER.format("", literal))


_INSTRUCTION = ("HloModule m\n\nENTRY e {{\n  p = f32[8]{{0}} parameter(0)\n"
                "  ROOT c = f32[8]{{0}} custom-call(p), custom_call_target=\"x\"{}\n}}\n")
REJECTED_TAILS = [", metadata={op_name=\"a\" source_line=1.5}", ", sharding={devices=[2]0,1 bogus}",
                  ", window={size=3y3}",
                  ", replica_groups=mesh['a'=2] {'a'}", ", dim_labels=b01f_01io-b01", ", slice={[0:1:2:3]}",
                  ", to_apply={ x = f32[] add(p, p) }", ", foo=f32", ", foo=1x2_3", ", sharding={replicated}, junk",
                  ", backend_config={\"a\": {}"]
ACCEPTED_TAILS = ["", ", metadata={op_name=\"a\" source_line=12}",
                  ", sharding={devices=[2,1]0,1 last_tile_dim_replicate}",
                  ", sharding={{replicated}, /*index=1*/{maximal device=0}}", ", window={size=3x3 pad=1_1x1_1}",
                  ", replica_groups={{0,1},{2,3}}", ", replica_groups=[2,2]<=[4]", ", backend_config={\"a\": [1, {}]}",
                  ", frontend_attributes={_xla=\"x\"}", ", foo={a=1, b={2,3}}",
                  ", operand_layout_constraints={f32[8]{0}}"]


@pytest.mark.parametrize("tail", REJECTED_TAILS)
def test_recogniser_refuses_unknown_or_bad_attribute_values(tail):
    assert not _recognises(_INSTRUCTION.format(tail))


@pytest.mark.parametrize("tail", ACCEPTED_TAILS)
def test_recogniser_takes_common_attribute_values(tail):
    text = _INSTRUCTION.format(tail)
    assert _recognises(text)
    assert _outcome(text, None)[0] == "ok" and _outcome(text, True)[0] == "ok"


_FRAMES = ("HloModule m\n\nFileNames\n1 \"a.py\"\n\nFunctionNames\n1 \"f\"\n\nFileLocations\n"
           "1 {{file_name_id=1 function_name_id={} line=3}}\n\n"
           "StackFrames\n1 {{file_location_id=1 parent_frame_id=0}}\n\n"
           "ENTRY e {{\n  ROOT p = f32[] parameter(0)\n}}\n")


@pytest.mark.parametrize("value", ["1", "\t1", " 1"])
def test_stack_frame_fields_read_alike_on_every_path(value):
    # Found by the fuzz campaign: a blank after `=` (the grammar's WS) made the fast path drop the field.
    text = _FRAMES.format(value)
    strict = _outcome(text, True)
    assert strict[0] == "ok"
    assert _outcome(text, None) == strict and _outcome(text, False) == strict
