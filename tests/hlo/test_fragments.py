"""Grammar unit tests on XLA's sub-grammar fragments (FRAGMENTS.tsv): each must parse or fail as XLA's does."""

from __future__ import annotations

import pytest

from corpus import CORPUS, corpus_dir, unescape
from hloscan.hlo.parser import HloSyntaxError, parse_fragment

# XLA's parse function -> the grammar's start rule for that sub-grammar.
START_RULES = {
    "ParseShape": "shape",
    "ParseSharding": "sharding",
    "ParseReplicaGroupsOnly": "replica_groups",
    "ParseCollectiveDeviceListBase": "replica_groups",
    "ParsePaddingConfig": "padding_config",
    "ParseConvolutionDimensionNumbers": "dim_labels_only",
    "ParseFrontendAttributes": "frontend_attributes_only",
    "LexesAsJsonDict": "json_dict_only",
}


def _rows() -> list[tuple[str, str, str, str]]:
    path = CORPUS / "xla-parser-fragments" / "FRAGMENTS.tsv"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [tuple(line.split("\t")[:4]) for line in lines if line]


def test_fragments_corpus_present():
    corpus_dir("xla-parser-fragments")
    assert len(_rows()) == 88


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r[0]}:{r[2][:30]}")
def test_fragment(row):
    _, function, text, expected = row
    text = unescape(text)
    try:
        parse_fragment(text, START_RULES[function])
        outcome = "OK"
    except HloSyntaxError as exc:
        assert exc.line >= 1 and exc.col >= 1
        outcome = "FAIL"
    assert outcome == expected
