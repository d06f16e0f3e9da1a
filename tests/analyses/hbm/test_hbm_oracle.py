"""The simulation and prediction (XLA's reports ignored) against the TPU compiler on tpu-oracle/real's hbm
family: E1000 verdicts, the memory-usage-report total, and memory_analysis()'s argument/output/alias bytes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from corpus import CORPUS, tsv_rows
from hloscan.analyses.hbm import analyze_modules
from hloscan.hlo.loader import load_file

REAL = CORPUS / "tpu-oracle" / "real"
TOLERANCE = {"after_optimizations": 0.10, "before_optimizations": 0.25}


def _cases() -> list[dict]:
    manifest = REAL / "MANIFEST.tsv"
    if not manifest.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"TPU oracle corpus missing at {REAL} (required when CI=true)")
        pytest.skip(f"TPU oracle corpus not found at {REAL}")
    rows = tsv_rows(manifest)
    return [r for r in rows if r["family"] == "hbm"]


def _report_total(case: Path) -> int:
    text = (case / "memory-usage-report.txt").read_text()
    return int(re.search(r"Memory Space: default \(color=0\)\nTotal bytes: (\d+)", text).group(1))


@pytest.mark.parametrize("stage", sorted(TOLERANCE))
def test_hbm_family_without_reports(stage):
    rows = _cases()
    assert len(rows) >= 7
    for r in rows:
        case = REAL / r["case"]
        path = str(case / f"{stage}.txt")
        [m] = analyze_modules(load_file(path).modules, path, r["generation"], use_reports=False)
        assert m.kind == ("simulated" if stage == "after_optimizations" else "predicted")
        oom = r["error_kind"] == "hbm_temporaries_oom"
        assert (m.verdict == "E1000") == oom, (r["case"], stage, m.xla_total_bytes)
        want = _report_total(case)
        assert abs(m.xla_total_bytes - want) <= TOLERANCE[stage] * want, (r["case"], stage)
        if r["argument_size_in_bytes"]:
            assert (m.arguments_bytes, m.outputs_bytes, m.aliased_bytes) == (
                int(r["argument_size_in_bytes"]), int(r["output_size_in_bytes"]), int(r["alias_size_in_bytes"]))
