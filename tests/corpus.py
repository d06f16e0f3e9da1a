"""Where tests find their data: the checkout (REPO), its fixtures/ (FIXTURES), and ../shared beside the checkout
(SHARED, CORPUS). Every test reaches these roots from here, so moving a test file never breaks a relative path.
Missing corpus data skips, or fails under CI=true."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]  # this file is tests/corpus.py
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


def require_path(path: Path) -> Path:
    """Skip when corpus data is missing, unless CI=true (then it is a failure)."""
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"corpus missing in CI: {path}")
        pytest.skip(f"corpus not available: {path}")
    return path


def corpus_dir(name: str) -> Path:
    return require_path(CORPUS / name)


def manifest(name: str) -> list[dict[str, str]]:
    """Rows of a corpus MANIFEST.tsv as dicts (TSV escapes \\n \\t \\\\ undone)."""
    lines = (corpus_dir(name) / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, (unescape(v) for v in line.split("\t")))) for line in lines[1:] if line]


def tsv_rows(path: Path) -> list[dict[str, str]]:
    """Rows of a tab-separated table with a header line (a fixture MANIFEST.tsv, LLO_BREAKDOWN.tsv), as dicts."""
    csv.field_size_limit(1 << 30)  # an allocation list (LLO_BREAKDOWN.tsv) holds thousands of spill slots
    with open(require_path(path), newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def rows_by_case(path: Path) -> dict[str, list[dict[str, str]]]:
    """A table's rows grouped by their `case` column, in file order (LLO_BREAKDOWN.tsv: one row per kernel)."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for row in tsv_rows(path):
        grouped.setdefault(row["case"], []).append(row)
    return grouped


def unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(value[i + 1], value[i : i + 2]))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def hlo_files(name: str) -> list[Path]:
    """Every file of a corpus folder that holds an HloModule (or a bare ENTRY computation)."""
    root = corpus_dir(name)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".hlo", ".txt"))
    return [p for p in files if _holds_module(p)]


def _holds_module(path: Path) -> bool:
    head = path.read_text(encoding="utf-8", errors="replace")
    return "HloModule" in head or "\nENTRY" in head or head.startswith("ENTRY")
