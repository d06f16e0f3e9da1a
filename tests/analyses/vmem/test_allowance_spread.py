"""The spreads the allowances state, measured again on the compiler's own allocation lists.

Each allowance rule states how far the compiler's internal scratch + spill fell from it (`Spread`: the
central 19 in 20 of the measured kernels). fixtures/oracle_new/<set>/LLO_BREAKDOWN.tsv has those figures
kernel by kernel; this measures every rule's spread from them and checks the stated one, so a model change
that moves an allowance cannot leave a stale range in the findings. Then the range the estimate shows must
hold the compiler's figure for most cases of every folder, the shared corpus included.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from corpus import FIXTURES, corpus_dir, rows_by_case, tsv_rows
from hloscan.analyses.vmem import compiler_scratch, scores_scratch
from hloscan.analyses.vmem.allowance import measured_spread
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.hlo.parser import parse_module

ORACLE_NEW = FIXTURES / "oracle_new"
# Every folder with the compiler's allocation lists: jax's bundled kernels (real .. real9) and the user-written and
# library kernels (user1 .. user7). Until the spreads were measured on all of them (real .. real7 alone, central
# 90%), they held the figure of 466 of 515 user-set cases.
FOLDERS = ["real", "real2_attention", "real2_rpagmm", "real3", "real4", "real5", "real6", "real7", "real8", "real9",
           "user1", "user2", "user3", "user4", "user5", "user6", "user7"]
STATED = {
    "attention-forward": scores_scratch.FORWARD_SPREAD,
    "attention-backward": scores_scratch.BACKWARD_SPREAD,
    "loop-scores": compiler_scratch.LOOP_SCORES_SPREAD,
    "dot-lhs-spill": compiler_scratch.DOT_LHS_SPREAD,
    "small-m-dot": compiler_scratch.SMALL_M_DOT_SPREAD,
}


def _kind(kernel_name: str) -> str:
    """A kernel's part of an attention backward pass or a grouped matmul's, in both name spaces (the
    Mosaic function's name in hloscan, the HLO instruction's in the allocation list)."""
    return next((k for k in ("dkv", "dq", "tgmm") if k in kernel_name), "main")


def _estimates(case_dir: Path, generation: str):
    module = parse_module((case_dir / "before_optimizations.txt").read_text())
    return [k.estimate for k in estimate_module(module, generation, None)]


def _measured_ratios() -> dict[str, list[float]]:
    """Per rule: the compiler's internal scratch + spill / the allowance, for kernels with one allowance."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for folder in FOLDERS:
        manifest = {r["case"]: r for r in tsv_rows(ORACLE_NEW / folder / "MANIFEST.tsv")}
        for case, rows in rows_by_case(ORACLE_NEW / folder / "LLO_BREAKDOWN.tsv").items():
            ours = defaultdict(list)
            for est in _estimates(ORACLE_NEW / folder / case, manifest[case]["generation"]):
                ours[_kind(est.kernel_name or "")].append(est)
            for row in rows:
                pool = ours[_kind(row["kernel"])]
                est = pool.pop(0) if pool else None
                if est is None or len(est.allowances) != 1 or not est.allowances[0].size:
                    continue
                rule = est.allowances[0].rule
                ratios[rule].append((int(row["spill"]) + int(row["internal"])) / est.allowances[0].size)
    return ratios


@pytest.fixture(scope="module")
def ratios() -> dict[str, list[float]]:
    return _measured_ratios()


@pytest.mark.parametrize("rule", sorted(STATED))
def test_stated_spread_is_the_measured_one(rule: str, ratios: dict[str, list[float]]) -> None:
    stated = STATED[rule]
    assert len(ratios[rule]) == stated.kernels
    low, high = measured_spread(ratios[rule])
    assert (round(low, 2), round(high, 2)) == (stated.low, stated.high)


# Cases whose compiler figure lies within the estimate's range (every kernel's range summed; an estimate
# without a range counts as its single figure, within 2%), measured when the ranges were introduced: 249 of
# 280 cases (89%); 247 once the K-tiled dot rule narrowed its range (real3 25 -> 23), 249 with v7x's loop
# factor 0.9. real8 was compiled after the spreads were set and is not part of their measurement: 28/32, then
# 29/32.
# With the spreads measured on every breakdown folder (central 95%, not real .. real7's central 90%): 817 of 859
# (95%), from 798; the user sets 481/515 from 466/515.
COVERAGE_FLOORS = {
    "shared": (57, 58),
    "real": (35, 35),
    "real2_attention": (20, 20),
    "real2_rpagmm": (18, 18),
    "real3": (29, 30),
    "real4": (34, 34),
    "real5": (29, 30),
    "real6": (23, 23),
    "real7": (31, 32),
    "real8": (31, 32),
    "real9": (29, 32),
    "user1": (53, 56),
    "user2": (116, 127),
    "user3": (95, 100),
    "user4": (71, 73),
    "user5": (62, 70),
    "user6": (26, 26),
    "user7": (58, 63),
    "user8": (52, 54),  # held out: compiled after the freeze at 10a704a, not part of the spreads' measurement
    "user9": (44, 57),  # held out at b57c6c7 (windows of operands MSA prefetched whole); 43 before the earliest-first bound
    "user10": (29, 34),  # held out: compiled after the freeze at e487566 (b57c6c7's VMEM model)
    "user11": (51, 52),  # held out: compiled after the freeze at 13fd580, scored once (49); 51 with 78f7f2d
    "user12": (60, 64),  # held out: compiled after the freeze at 69c3445, scored once
    "user13": (68, 68),  # held out: compiled after the freeze at 30c9136, scored once (68 there too)
    "user14": (48, 55),  # held out: compiled after the freeze at ed04451 (VMEM code of b976032), scored once
    "user17": (61, 62),  # held out: compiled after the freeze at 911ec84, scored once
    "user18": (57, 59),  # held out: compiled after the freeze at c75e9cd, scored once
    "user19": (52, 54),  # held out: compiled after the freeze at 5e76ac9, scored once
    "user20": (51, 56),  # held out: compiled after the freeze at 0260b42, scored once
    "user21": (54, 60),  # held out: compiled after the freeze at 0260b42, scored once
    "user22": (54, 56),  # held out: compiled after the freeze at 0260b42, scored once
}


def _cases(folder: str):
    root = corpus_dir("tpu-oracle/real") if folder == "shared" else ORACLE_NEW / folder
    for row in tsv_rows(root / "MANIFEST.tsv"):
        if row["family"] == "pallas" and row["verdict"] == "ok" and row["scoped_sum"] and (root / row["case"]).is_dir():
            yield root / row["case"], row["generation"], int(row["scoped_sum"])


def _within_range(estimates, figure: int) -> bool:
    low = high = 0
    for est in estimates:
        est_low, est_high = est.range_bytes or (est.estimate_bytes, est.estimate_bytes)
        low += est_low
        high = None if high is None or est_high is None else high + est_high
    return low * 0.98 <= figure and (high is None or figure <= high * 1.02)


@pytest.mark.parametrize("folder", sorted(COVERAGE_FLOORS))
def test_range_holds_the_compiler_figure(folder: str) -> None:
    held = total = 0
    for case_dir, generation, figure in _cases(folder):
        total += 1
        held += _within_range(_estimates(case_dir, generation), figure)
    print(f"{folder}: {held}/{total}")
    floor, cases = COVERAGE_FLOORS[folder]
    assert total == cases and held >= floor
