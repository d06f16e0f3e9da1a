"""`vmem --exact` on every kernel of the compiled pallas cases of shared/corpus/tpu-oracle/real, against the
recorded whole-program after_codegen figures: `make confirm-exact` (under the oracle lock on a shared
machine; about two minutes, since every kernel is compiled in this one process instead of one worker
process each as `vmem --exact` does, so the times are compile times without libtpu's start-up).

For each kernel: its minimal module (hloscan.confirm.exact) compiled by the worker's own compile function,
its figure read back with hloscan's readers, and compared with the whole program's figure three ways: as
compiled alone, moved to the whole program's placement read from the case's after_codegen.txt, and moved
to the placement hloscan predicts without it. Results go to build/confirm-exact/results.jsonl.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: corpus.py

from corpus import REPO, corpus_dir, manifest  # noqa: E402
from hloscan.analyses.vmem.kernels import tpu_custom_calls  # noqa: E402
from hloscan.confirm import readback  # noqa: E402
from hloscan.confirm.exact import ExactFigure, compared, kernel_modules, whole_kernels  # noqa: E402
from hloscan.confirm.runner import WORKER, worker_request  # noqa: E402
from hloscan.hlo.loader import load_file  # noqa: E402

REAL = "tpu-oracle/real"
OUT = REPO / "build" / "confirm-exact"


def load_worker():
    """worker.py by its path, as the worker process runs it: this process then compiles as a worker does."""
    spec = importlib.util.spec_from_file_location("confirm_worker", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    return worker


def case_kernels(worker, row: dict[str, str]) -> list[dict]:
    case, gen = corpus_dir(REAL) / row["case"], row["generation"]
    path = str(case / "before_optimizations.txt")
    module = load_file(path).modules[0]
    recorded = {k.body: k.scoped_bytes for k in readback.compiled_kernels(case)[0]}
    beside, predicted = whole_kernels(module, path, gen), whole_kernels(module, None, gen)
    calls = {inst.name: inst for _, inst in tpu_custom_calls(module)}
    out = []
    for km in kernel_modules(module):
        with tempfile.TemporaryDirectory(prefix="hloscan-exact-") as dump:
            start = time.perf_counter()
            result = worker.compile_request(worker_request(km.text, gen) | {"dump_to": dump})
            wall = time.perf_counter() - start
            [alone] = readback.compiled_kernels(Path(dump))[0] or [None]
        figure = ExactFigure(km.instruction, km.line, result["status"], None, result["error"], wall)
        if alone is None:
            out.append({"case": row["case"], "kernel": km.instruction, "status": result["status"],
                        "error": (result["error"] or "")[:200], "compile_s": result["compile_s"]})
            continue
        inst = calls[km.instruction]
        moved = compared(figure, alone, beside.get(km.instruction), inst, gen)
        guessed = compared(figure, alone, predicted.get(km.instruction), inst, gen)
        out.append({"case": row["case"], "kernel": km.instruction, "status": result["status"],
                    "whole": recorded.get(alone.body), "alone": alone.scoped_bytes,
                    "moved_to_whole_placement": moved.placed_bytes, "moved_to_predicted_placement": guessed.placed_bytes,
                    "differences": list(moved.differences), "compile_s": result["compile_s"]})
    return out


def summary(rows: list[dict]) -> dict:
    compiled = [r for r in rows if r.get("whole") is not None]
    equal = lambda key: sum(1 for r in compiled if r[key] == r["whole"])  # noqa: E731
    ratios = sorted(r["alone"] / r["whole"] for r in compiled if r["alone"] != r["whole"])
    return {
        "kernels": len(rows), "without_both_figures": len(rows) - len(compiled),
        "failing_alone": sum(1 for r in rows if r["status"] != "compiled"),
        "alone_equal_whole": f"{equal('alone')}/{len(compiled)}",
        "moved_to_whole_placement_equal_whole": f"{equal('moved_to_whole_placement')}/{len(compiled)}",
        "moved_to_predicted_placement_equal_whole": f"{equal('moved_to_predicted_placement')}/{len(compiled)}",
        "alone_over_whole_of_the_rest": [ratios[0], statistics.median(ratios), ratios[-1]] if ratios else None,
        "still_off_with_whole_placement": [(r["case"], r["kernel"], r["moved_to_whole_placement"], r["whole"])
                                           for r in compiled if r["moved_to_whole_placement"] != r["whole"]],
        "compile_s_per_kernel": {"median": statistics.median(r["compile_s"] for r in rows),
                                 "max": max(r["compile_s"] for r in rows)},
    }


def main() -> int:
    worker = load_worker()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for row in manifest(REAL):
        if row["family"] == "pallas" and row["verdict"] != "lower_error":
            rows.extend(case_kernels(worker, row))
    (OUT / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(json.dumps(summary(rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
