"""The E1001 estimator against the TPU oracle: verdict agreement and estimate accuracy per generation."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from corpus import CORPUS, tsv_rows
from hloscan.hlo.parser import parse_module
from hloscan.analyses.vmem.estimate import KernelEstimate, estimate_kernel

VMEM = CORPUS / "tpu-oracle" / "vmem"
GENERATIONS = ("v4", "v5e", "v5p", "v6e", "v7x")
# Targets: verdict agreement (E1001 vs not) per generation, and the share of compiled kernels whose
# estimate lands within 5% of the oracle's used_scoped_memory_configs figure.
VERDICT_TARGET = {"v4": 0.90, "v5e": 1.0, "v5p": 1.0, "v6e": 1.0, "v7x": 0.90}
WITHIN_5_TARGET = 0.80
# Regression floor = the measured share (144/173 = 83.2% with the K-tiled dot rule of compiler_scratch rule 2;
# 142/173 with the allowance it replaced, 126/173 before the internal-scratch allowances and the
# per-generation (rows, 1) padding). Out-of-sample figures: tests/test_vmem_heldout.py.
WITHIN_5_FLOOR = 0.83


def _corpus_or_skip() -> Path:
    if not (VMEM / "MANIFEST.tsv").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"TPU oracle corpus missing at {VMEM} (required when CI=true)")
        pytest.skip(f"TPU oracle corpus not found at {VMEM}")
    return VMEM


@dataclass(frozen=True)
class Case:
    name: str
    generation: str
    verdict: str  # "ok" or "E1001"
    scoped_bytes: int | None
    err_size_bytes: int | None


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def load_cases(root: Path) -> list[Case]:
    rows = tsv_rows(root / "MANIFEST.tsv")
    cases = []
    for row in rows:
        verdict = "E1001" if row["verdict"].startswith("E1001") else row["verdict"]
        if verdict not in ("ok", "E1001") or not (root / row["case"] / "before_optimizations.txt").is_file():
            continue
        cases.append(Case(row["case"], row["generation"], verdict, _int(row["scoped_bytes"]),
                          _int(row["err_size_bytes"])))
    return cases


def estimate_case(root: Path, case: Case, dump: str = "before_optimizations.txt") -> list[KernelEstimate]:
    module = parse_module((root / case.name / dump).read_text())
    out = []
    for comp, inst in module.instructions():
        if inst.opcode != "custom-call" or inst.custom_call_target != "tpu_custom_call":
            continue
        operands = [op.shape or comp.by_name[op.name].shape for op in inst.operands]
        out.append(estimate_kernel(inst.attr("backend_config"), operands, inst.shape, tpu=case.generation,
                                   instruction_name=inst.name))
    return out


def kernel_scoped_bytes(root: Path, case: Case) -> int | None:
    """The kernel's own used_scoped_memory_configs figure from after_codegen.txt.

    NOTE: MANIFEST's scoped_bytes is that figure summed over every instruction of the module; in 24
    cases (layout copies before the kernel, a reduce after it) it is larger than the kernel's own.
    """
    if not (root / case.name / "after_codegen.txt").is_file():
        return None
    (est,) = estimate_case(root, case, "after_codegen.txt")
    return est.measured_bytes


@dataclass
class Figures:
    agree: dict[str, tuple[int, int]]
    within_5: tuple[int, int]
    within_5_no_v7x: tuple[int, int]
    worst_under: tuple[float, str]
    rows: list[str]


def evaluate(root: Path) -> Figures:
    agree = {g: [0, 0] for g in GENERATIONS}
    within, compiled, worst, rows = 0, 0, (0.0, ""), []
    within_no_v7x, compiled_no_v7x = 0, 0
    after_opt = [0, 0]
    for case in load_cases(root):
        (est,) = estimate_case(root, case)
        predicted = "E1001" if est.exceeds else "ok"
        agree[case.generation][0] += predicted == case.verdict
        agree[case.generation][1] += 1
        mark = "" if predicted == case.verdict else "  <-- verdict"
        own = kernel_scoped_bytes(root, case) if case.scoped_bytes else None  # 0: operands in VMEM
        if own:
            compiled += 1
            ratio = est.predicted_bytes / own
            within += abs(ratio - 1) <= 0.05
            if case.generation != "v7x":
                compiled_no_v7x += 1
                within_no_v7x += abs(ratio - 1) <= 0.05
            if 1 - ratio > worst[0]:
                worst = (1 - ratio, case.name)
            mark += "" if abs(ratio - 1) <= 0.05 else f"  ratio {ratio:.3f}"
            # after_optimizations.txt has the S(1) placements but still an empty used_scoped figure.
            if (root / case.name / "after_optimizations.txt").is_file():
                (late,) = estimate_case(root, case, "after_optimizations.txt")
                after_opt[0] += abs(late.predicted_bytes / own - 1) <= 0.05
                after_opt[1] += 1
        rows.append(f"{case.name:55s} {case.verdict:5s} est={est.predicted_bytes:>10d} "
                    f"oracle={own or case.err_size_bytes or 0:>10d} {est.verdict}{mark}")
    rows.append(f"estimates from after_optimizations.txt within 5%: {after_opt[0]}/{after_opt[1]}")
    return Figures({g: tuple(v) for g, v in agree.items()}, (within, compiled),
                   (within_no_v7x, compiled_no_v7x), worst, rows)


def test_estimator_against_oracle():
    figures = evaluate(_corpus_or_skip())
    print()
    for row in figures.rows:
        print(row)
    for gen, (ok, total) in figures.agree.items():
        print(f"verdict agreement {gen}: {ok}/{total} = {ok / max(total, 1):.1%}")
    within, compiled = figures.within_5
    print(f"estimates within 5% of used_scoped_memory_configs: {within}/{compiled} = {within / compiled:.1%}")
    ok5, n5 = figures.within_5_no_v7x
    print(f"  without v7x (XLA prefetches whole inputs into VMEM there, dropping windows): {ok5}/{n5} = {ok5 / n5:.1%}")
    print(f"worst under-estimate: {figures.worst_under[0]:.1%} ({figures.worst_under[1]})")
    print(f"target for within-5%: {WITHIN_5_TARGET:.0%} ({'met' if within / compiled >= WITHIN_5_TARGET else 'NOT met'})")
    for gen, (ok, total) in figures.agree.items():
        assert total and ok / total >= VERDICT_TARGET[gen], f"{gen}: verdict agreement {ok}/{total}"
    assert within / compiled >= WITHIN_5_FLOOR


def test_post_compilation_dump_reports_measured_figure():
    """after_codegen.txt carries used_scoped_memory_configs: the estimate must report exactly that."""
    root = _corpus_or_skip()
    checked = 0
    for case in load_cases(root):
        if not case.scoped_bytes or not (root / case.name / "after_codegen.txt").is_file():
            continue
        (est,) = estimate_case(root, case, "after_codegen.txt")
        assert est.kind == "measured" and est.estimate_bytes == est.measured_bytes, case.name
        # The module-wide MANIFEST figure is never below the kernel's own one.
        assert 0 <= est.measured_bytes <= case.scoped_bytes, case.name
        assert est.verdict in ("fits", "tight"), case.name
        checked += 1
    assert checked >= 150
