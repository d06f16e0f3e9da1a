"""Corpus tests of the parser: XLA's own test texts and real dumps must parse, and round-trip exactly."""

from __future__ import annotations

import pytest

from hloscan.hlo.parser import HloSyntaxError, parse_text

from corpus import CORPUS, corpus_dir, hlo_files, manifest


def _rows(kind_prefix: str = "") -> list[dict[str, str]]:
    # Collection must not fail without the corpus; test_corpus_has_175_roundtrip_cases then skips (or
    # fails under CI=true) through corpus_dir().
    if not (CORPUS / "xla-parser").exists():
        return []
    return [r for r in manifest("xla-parser") if r["kind"].startswith(kind_prefix)]


@pytest.mark.parametrize("strict", [False, True], ids=["fast", "strict"])
@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["file"])
def test_xla_parser_corpus_parses(row, strict):
    path = corpus_dir("xla-parser") / row["file"]
    modules = parse_text(path.read_text(encoding="utf-8"), str(path), strict=strict)
    assert modules and all(m.computations for m in modules)


@pytest.mark.parametrize("strict", [False, True], ids=["fast", "strict"])
@pytest.mark.parametrize("row", _rows("roundtrip"), ids=lambda r: r["file"])
def test_roundtrip_prints_back_identical(row, strict):
    path = corpus_dir("xla-parser") / row["file"]
    text = path.read_bytes().decode("utf-8")
    (module,) = parse_text(text, str(path), strict=strict)
    assert module.to_text() == text


def test_corpus_has_175_roundtrip_cases():
    corpus_dir("xla-parser")
    assert len(_rows("roundtrip")) == 175


@pytest.mark.parametrize("folder", ["xla-hlo-files", "xla-host-offload", "tpu-oracle"])
def test_every_module_file_parses(folder):
    failures = []
    files = hlo_files(folder)
    for path in files:
        try:
            parse_text(path.read_text(encoding="utf-8"), str(path))
        except HloSyntaxError as exc:
            failures.append(exc.format())
    assert files, f"no HLO files found in {folder}"
    assert failures == [], "\n".join(failures[:5])
