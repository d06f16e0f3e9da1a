"""The closing measurement of `hloscan confirm` on shared/corpus/tpu-oracle/real (103 recorded compiles):
run as `make confirm-corpus` (under the oracle lock on a shared machine), not in the test suite (~40 min).

For each case: `confirm` of its before_optimizations.txt for the case's generation, and the verdict compared
with the recorded one (MANIFEST `verdict`/`error_kind`); the per-kernel scoped VMEM, memory_analysis and the
memory-usage report's total compared with the recorded figures; then (pallas cases) every kernel compiled
alone (`vmem --exact`) and its figure compared with the whole-program one. Results go to
build/confirm-corpus/results.jsonl, one line per case (a rerun resumes), and a summary is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: corpus.py

import hloscan.checks  # noqa: F401,E402  (registers the checks)
from corpus import REPO, corpus_dir, manifest  # noqa: E402
from hloscan.confirm.exact import compared, exact_figures, whole_kernels  # noqa: E402
from hloscan.confirm.runner import tpu_python  # noqa: E402
from hloscan.confirm.scan import confirm_paths  # noqa: E402
from hloscan.confirm.verdict import recorded_kind  # noqa: E402
from hloscan.lint.config import parse_config  # noqa: E402

OUT = REPO / "build" / "confirm-corpus"


def verify_case(row: dict[str, str], python: str, timeout: float, exact: bool) -> dict:
    case, gen = row["case"], row["generation"]
    path = corpus_dir("tpu-oracle/real") / case / "before_optimizations.txt"
    start = time.perf_counter()
    done = confirm_paths([str(path)], parse_config({"tpu": gen}), python, tpu=gen, timeout=timeout)
    wall = time.perf_counter() - start
    m = done.modules[0]
    want = recorded_kind(row["verdict"], row["error_kind"])
    got = m.verdict.kind if m.verdict else f"no verdict ({m.result.status})"
    recorded_scoped = json.loads(row["scoped_per_instr"]) if row.get("scoped_per_instr") else {}
    out = {"case": case, "generation": gen, "family": row["family"], "recorded": want, "got": got,
           "agree": got == want, "status": m.result.status, "error": (m.result.error or "")[:400],
           "compile_s": m.result.compile_s, "wall_s": round(m.result.wall_s, 2), "confirm_wall_s": round(wall, 2),
           "recorded_compile_s": float(row["compile_s"] or 0),
           "scoped_per_instr": m.result.scoped_per_instr, "recorded_scoped_per_instr": recorded_scoped,
           "kernels": [k.to_json() for k in m.kernels], "hbm": m.hbm.to_json() if m.hbm else None,
           "mem_report_totals": m.result.mem_report_totals,
           "recorded_mem_report_totals": json.loads(row["mem_report_totals"]) if row.get("mem_report_totals") else {},
           "memory_analysis": m.result.memory_analysis,
           "recorded_memory_analysis": {k: int(row[k]) for k in m.result.memory_analysis if row.get(k)},
           "statuses": [s for s in m.statuses if s],
           "findings": [f"{f.code}:{f.instruction}:{s}" for f, s in zip(m.findings, m.statuses) if s]}
    if exact and row["family"] == "pallas":
        by_name = {k["instruction"]: k for k in out["kernels"]}
        module = m_module(done)
        # The placement beside the dump (the case's after_codegen.txt) and hloscan's prediction without it:
        # the same alone compile, moved to each.
        predicted = whole_kernels(module, None, gen)
        calls = {inst.name: inst for _, inst in module.with_opcode("custom-call")}
        out["exact"] = []
        for e in exact_figures(module, gen, python, timeout, str(path)):
            guess = compared(e, e.alone, predicted.get(e.instruction), calls[e.instruction], gen) if e.alone else e
            out["exact"].append({
                "instruction": e.instruction, "status": e.status, "exact_bytes": e.scoped_bytes,
                "whole_bytes": by_name.get(e.instruction, {}).get("compiler_bytes"), "wall_s": round(e.wall_s, 2),
                "error": (e.error or "")[:200], "placement_source": e.placement_source,
                "differences": list(e.differences), "placed_bytes": e.placed_bytes,
                "predicted_placed_bytes": guess.placed_bytes})
    return out


def m_module(done):
    return next(mod for f in done.result.files for mod in f.modules)


def summary(rows: list[dict]) -> dict:
    agree = [r for r in rows if r["agree"]]
    kernels = [(r["case"], k) for r in rows for k in r.get("exact", []) if k["exact_bytes"] and k["whole_bytes"]]
    equal = [k for _, k in kernels if k["exact_bytes"] == k["whole_bytes"]]
    ratios = sorted(k["exact_bytes"] / k["whole_bytes"] for _, k in kernels if k["exact_bytes"] != k["whole_bytes"])
    scoped_match = sum(1 for r in rows if r["recorded_scoped_per_instr"]
                       and r["scoped_per_instr"] == r["recorded_scoped_per_instr"])
    scoped_cases = sum(1 for r in rows if r["recorded_scoped_per_instr"])
    report_match = sum(1 for r in rows if r["recorded_mem_report_totals"] and r["mem_report_totals"]
                       and _same_totals(r["mem_report_totals"], r["recorded_mem_report_totals"]))
    report_cases = sum(1 for r in rows if r["recorded_mem_report_totals"])
    exact_walls = [k["wall_s"] for r in rows for k in r.get("exact", [])]
    statuses = [s for r in rows for s in r["statuses"]]
    static_errors = sorted(abs(k["static_error"]) for r in rows for k in r["kernels"] if k["static_error"] is not None)
    hbm_errors = sorted(abs(r["hbm"]["static_error"]) for r in rows if r["hbm"] and r["hbm"]["static_error"] is not None)
    e1001_alone = [k for r in rows if r["recorded"] == "scoped_vmem_oom" for k in r.get("exact", [])]
    return {
        "cases": len(rows), "verdict_agree": len(agree),
        "disagree": [(r["case"], r["recorded"], r["got"]) for r in rows if not r["agree"]],
        "scoped_per_instr_equal": f"{scoped_match}/{scoped_cases}",
        "mem_report_totals_equal": f"{report_match}/{report_cases}",
        "exact_equal_whole": f"{len(equal)}/{len(kernels)}",
        "exact_moved_to_the_whole_programs_placement_equal_whole":
            f"{sum(1 for _, k in kernels if k.get('placed_bytes') == k['whole_bytes'])}/{len(kernels)}",
        "exact_moved_to_hloscans_predicted_placement_equal_whole":
            f"{sum(1 for _, k in kernels if k.get('predicted_placed_bytes') == k['whole_bytes'])}/{len(kernels)}",
        "exact_over_whole_ratios_of_the_rest": {"min": ratios[0], "median": statistics.median(ratios),
                                                "max": ratios[-1]} if ratios else None,
        "exact_kernels_without_figure": sum(1 for r in rows for k in r.get("exact", [])
                                            if not (k["exact_bytes"] and k["whole_bytes"])),
        "static_findings": {s: statuses.count(s) for s in ("confirmed", "contradicted", "not-reached", "missed")},
        "kernel_estimate_abs_error": _spread(static_errors),
        "hbm_estimate_abs_error": _spread(hbm_errors),
        "exact_kernels_of_e1001_cases_failing_alone": f"{sum(1 for k in e1001_alone if k['status'] == 'compile_error')}"
                                                       f"/{len(e1001_alone)}",
        "wall_s_per_program": {"median": statistics.median(r["wall_s"] for r in rows),
                               "max": max(r["wall_s"] for r in rows), "total": sum(r["wall_s"] for r in rows)},
        "wall_s_per_kernel_alone": {"median": statistics.median(exact_walls), "max": max(exact_walls),
                                    "count": len(exact_walls)} if exact_walls else None,
    }


def _spread(values: list[float]) -> dict | None:
    if not values:
        return None
    within = lambda bound: sum(1 for v in values if v <= bound)  # noqa: E731
    return {"count": len(values), "median": round(statistics.median(values), 4), "max": round(values[-1], 4),
            "within_5pct": within(0.05), "within_20pct": within(0.20)}


def _same_totals(got: dict, recorded: dict) -> bool:
    return all(got.get(space) == value for space, value in recorded.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=None, help="python with the tpu extra (default: this one)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--only", default=None, help="substring of the case names to run")
    parser.add_argument("--case", default=None, help="run this one case (a driver can lock per compile)")
    parser.add_argument("--summary", action="store_true", help="only summarise the results so far")
    parser.add_argument("--rerun", action="store_true", help="compile the chosen cases again (the last result counts)")
    args = parser.parse_args()
    python = tpu_python(args.python)
    OUT.mkdir(parents=True, exist_ok=True)
    results = OUT / "results.jsonl"
    done = {json.loads(line)["case"]: json.loads(line) for line in results.read_text().splitlines()} \
        if results.exists() else {}
    rows = [r for r in manifest("tpu-oracle/real")
            if (args.only is None or args.only in r["case"]) and args.case in (None, r["case"])]
    with results.open("a") as sink:
        for n, row in enumerate([] if args.summary else rows, 1):
            if row["case"] in done and not args.rerun:
                continue
            result = verify_case(row, python, args.timeout, not args.no_exact)
            done[row["case"]] = result
            sink.write(json.dumps(result) + "\n")
            sink.flush()
            print(f"[{n}/{len(rows)}] {row['case']}: recorded {result['recorded']}, confirm {result['got']} "
                  f"({'agree' if result['agree'] else 'DISAGREE'}) {result['wall_s']} s", flush=True)
    if not rows or args.summary:  # a --case that names no case: only the summary of what is done
        rows = manifest("tpu-oracle/real")
    final = summary([done[r["case"]] for r in rows if r["case"] in done])
    (OUT / "summary.json").write_text(json.dumps(final, indent=2))
    print(json.dumps(final, indent=2))
    return 0 if final["verdict_agree"] == final["cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
