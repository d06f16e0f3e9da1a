"""tpu-oracle/real: jax's own programs and Pallas kernels, labelled by the real TPU compiler.

Whole case folders are checked the way a user runs `hloscan check --tpu GEN folder/` (every stage of the
module): no error or warning where the compiler accepted the program, the right finding where it failed
(E1200, E1001, whole-VMEM capacity), and kernel estimates from before_optimizations against the compiler's
per-kernel `used_scoped_memory_configs`, per kernel family.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpus import CORPUS, manifest, require_path

from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.lint.engine import Selection, selected_checks
from hloscan.lint.finding import Severity
from hloscan.hlo.loader import load
from hloscan.lint.scan import build_tasks, scan_tasks

REAL = CORPUS / "tpu-oracle" / "real"


@dataclass(frozen=True)
class Case:
    name: str
    generation: str
    family: str
    want: str  # "ok" | "E1200" | "E1001" | "VMEM" (whole-VMEM capacity)
    scoped_sum: int


def cases() -> list[Case]:
    out = []
    for row in manifest("tpu-oracle/real"):
        verdict, kind = row["verdict"], row.get("error_kind", "")
        if row["family"] == "hbm" or kind == "hbm_temporaries_oom":
            continue  # HBM capacity is another command's business
        if verdict == "ok":
            want = "ok"
        elif kind == "vmem_capacity_oom":
            want = "VMEM"
        elif verdict[:1] == "E":
            want = verdict.split(":")[0]
        else:
            continue
        scoped = int(row["scoped_sum"]) if row.get("scoped_sum") else 0
        out.append(Case(row["case"], row["generation"], row["family"], want, scoped))
    return out


def findings_of(case: Case) -> list:
    checks = selected_checks(Selection())
    result = scan_tasks(build_tasks([str(REAL / case.name)], checks), {"_global": {"tpu": case.generation}})
    return result.findings


@pytest.fixture(scope="module")
def verdicts() -> list[tuple[Case, list]]:
    require_path(REAL / "MANIFEST.tsv")
    return [(c, findings_of(c)) for c in cases()]


def test_no_error_or_warning_where_the_compiler_accepted(verdicts) -> None:
    accepted = [(c, f) for c, f in verdicts if c.want == "ok"]
    assert len(accepted) >= 60
    bad = [f"{c.name}: {sorted({x.code for x in f if x.severity in (Severity.ERROR, Severity.WARNING)})}"
           for c, f in accepted if any(x.severity in (Severity.ERROR, Severity.WARNING) for x in f)]
    assert not bad, "false positives:\n" + "\n".join(bad)


def test_every_compiler_error_is_found(verdicts) -> None:
    failed = [(c, f) for c, f in verdicts if c.want != "ok"]
    assert {c.want for c, _ in failed} >= {"E1200", "E1001", "VMEM"}
    missed = []
    for case, found in failed:
        if case.want == "VMEM":
            hit = any(x.code == "HLO205" and x.severity is Severity.ERROR for x in found)
        else:
            hit = any(x.xla_error == case.want for x in found)
        if not hit:
            missed.append(f"{case.name}: compiler {case.want}, hloscan {sorted({x.code for x in found})}")
    assert not missed, "missed:\n" + "\n".join(missed)


def test_capacity_finding_quotes_the_xla_message(verdicts) -> None:
    for case, found in verdicts:
        if case.want != "VMEM":
            continue
        error = (REAL / case.name / "error.txt").read_text(encoding="utf-8")
        capacity = re.search(r"Used [\d.]+M of ([\d.]+M) vmem", error).group(1)
        (finding,) = [x for x in found if x.code == "HLO205"][:1]
        assert f"of {capacity} vmem" in finding.data["xla_message"], case.name
        # Estimated before codegen, it says how far to trust it: a range or a lower bound, never measured.
        assert finding.data["figure_kind"] in ("range", "lower-bound", "exact"), case.name
        assert finding.data["lower_bound"] is (finding.data["figure_kind"] == "lower-bound")


# Share of a family's compiled kernels whose before_optimizations estimate is within 5% of the compiler's
# figure, and the worst under-estimate allowed. Today's figures with a little room: a drop fails the test.
# flash/splash: which operands memory-space assignment keeps whole in VMEM (S(1)) is predicted
# (analyses/vmem/residency.py) and the score-matrix scratch is an empirical fit (scores_scratch.py). The
# worst splash case is v5p's backward pass (-22.7%): MSA kept only 2 of its shared 4 MiB arrays in VMEM,
# where the same chip kept 4 of flash backward's 8 MiB ones; the predictor takes flash's budget (-20.4%
# before the backward score allowance was refitted from 1.4 to 1.2 on 67 kernels, which held-out sets favour).
FAMILY_FLOORS = {
    "paged": (0.70, -0.15),
    "gmm": (0.55, -0.10),
    "matmul": (1.00, -0.05),
    "flash": (0.50, -0.15),
    "splash": (0.15, -0.25),
    "rpa": (0.00, -0.50),
}


def family(case: Case) -> str:
    return re.sub(r"_.*", "", case.name.split("__")[2])


def test_kernel_estimates_per_family() -> None:
    require_path(REAL / "MANIFEST.tsv")
    figures: dict[str, list[float]] = {}
    for case in cases():
        if case.family != "pallas" or case.want != "ok" or case.scoped_sum <= 0:
            continue
        (module,) = load(REAL / case.name / "before_optimizations.txt")
        estimate = sum(k.estimate.estimate_bytes for k in estimate_module(module, case.generation, None))
        figures.setdefault(family(case), []).append((estimate - case.scoped_sum) / case.scoped_sum)
    report = {f: (sum(abs(r) <= 0.05 for r in rel), len(rel), round(min(rel), 3)) for f, rel in figures.items()}
    print("\nwithin 5% / kernels / worst under-estimate per family:", json.dumps(report))
    assert set(report) >= set(FAMILY_FLOORS)
    for name, (share, worst) in FAMILY_FLOORS.items():
        within, total, low = report[name]
        assert within / total >= share, f"{name}: {within}/{total} within 5%"
        assert low >= worst, f"{name}: worst under-estimate {low:+.0%}"


def test_host_offload_programs_read_before_the_offloader() -> None:
    """The same module's after_optimizations.txt alone: XLA's own DMAs there are neither E1200 nor host compute."""
    require_path(REAL / "MANIFEST.tsv")
    checks = [c for c in selected_checks(Selection()) if c.code in ("HLO101", "HLO102")]
    for case in cases():
        after = REAL / case.name / "after_optimizations.txt"
        if case.family != "programs" or case.want != "ok" or not after.is_file():
            continue
        result = scan_tasks(build_tasks([str(after)], checks))
        assert not result.findings, f"{case.name}: {[f.code for f in result.findings]}"
