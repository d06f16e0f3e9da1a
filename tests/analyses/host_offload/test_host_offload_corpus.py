"""HLO101 against XLA's own host-offload test verdicts and the real TPU compiler's (E1200 exactly where XLA says)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpus import CORPUS, manifest, require_path

from hloscan.lint.engine import run_checks
from hloscan.analyses.host_offload.explain import explain_e1200, starting_from
from hloscan.hlo.loader import load
from hloscan.lint.registry import lookup

HLO101 = lookup("HLO101")
# Rows whose test runs the host offloader itself or a whole compile; the rest assert other passes.
_RUNS_OFFLOADER = re.compile(r"HostOffloader|full pipeline|hlo-opt")


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    e1200: bool
    xla_start: str | None  # the instruction XLA's message names


def xla_cases() -> list[Case]:
    out = []
    for row in manifest("xla-host-offload"):
        if row["expected"] not in ("ok", "error") or not _RUNS_OFFLOADER.search(row["pass_run_by_test"]):
            continue
        e1200 = row["expected"] == "error" and row["error_class"] == "output-not-host"
        path = CORPUS / "xla-host-offload" / row["file"]
        out.append(Case(row["file"], path, e1200, starting_from(row["error_substring"]) if e1200 else None))
    return out


def tpu_cases() -> list[Case]:
    out = []
    for row in manifest("tpu-oracle/host"):
        folder = CORPUS / "tpu-oracle" / "host" / row["case"]
        error = folder / "error.txt"
        text = error.read_text(encoding="utf-8") if error.exists() else row.get("error", "")
        e1200 = row["verdict"].startswith("E1200")
        out.append(Case(row["case"], folder / "before_optimizations.txt", e1200, starting_from(text) if e1200 else None))
    return out


def base(name: str | None) -> str | None:
    # XLA's passes regenerate numeric suffixes when they clone or rebuild an instruction (call inlining,
    # while-loop simplification): tuple.6 in the dump is XLA's tuple.12, dynamic-update-slice.1 its .0.
    return None if name is None else re.sub(r"\.\d+$", "", name)


def predict(case: Case) -> tuple[bool, str | None]:
    findings = []
    for module in load(case.path):
        findings += run_checks(module, str(case.path), [HLO101])
    first = [f for f in findings if f.data.get("xla_reports_this")]
    return bool(findings), (first[0].data["starting_from"] if first else None)


@pytest.fixture(scope="module")
def results() -> list[tuple[Case, bool, str | None]]:
    require_path(CORPUS / "xla-host-offload")
    require_path(CORPUS / "tpu-oracle" / "host")
    cases = xla_cases() + tpu_cases()
    assert len(cases) > 200
    return [(c, *predict(c)) for c in cases]


def test_verdicts_match_xla(results) -> None:
    matrix = {(e, p): 0 for e in (True, False) for p in (True, False)}
    wrong = []
    for case, predicted, _ in results:
        matrix[(case.e1200, predicted)] += 1
        if predicted != case.e1200:
            wrong.append(f"{case.name}: XLA {'E1200' if case.e1200 else 'ok'}, hloscan {'E1200' if predicted else 'ok'}")
    print(f"\nconfusion (rows XLA, cols hloscan)  E1200/ok\n  E1200: {matrix[(True, True)]:4d} {matrix[(True, False)]:4d}"
          f"\n  ok:    {matrix[(False, True)]:4d} {matrix[(False, False)]:4d}")
    assert not wrong, "\n".join(wrong)


def test_starting_from_matches_xla(results) -> None:
    named = [(c, got) for c, predicted, got in results if c.e1200 and c.xla_start]
    exact = sum(got == c.xla_start for c, got in named)
    same = sum(base(got) == base(c.xla_start) for c, got in named)
    print(f"\nstarting-from: exact name {exact}/{len(named)}, same instruction modulo renumbering {same}/{len(named)}")
    for c, got in named:
        if got != c.xla_start:
            print(f"  {c.name}: XLA {c.xla_start}, hloscan {got}")
    assert named
    assert same / len(named) >= 0.9


def test_explainer_shows_the_trace() -> None:
    case = next(c for c in tpu_cases() if c.name.endswith("hlo_tuple_output_host_elem"))
    text = (case.path.parent / "error.txt").read_text(encoding="utf-8")
    explained = explain_e1200(text, load(case.path))
    assert explained is not None and "tuple.1" in explained and "mth.1" in explained
    assert explain_e1200("RESOURCE_EXHAUSTED: something else", None) is None
