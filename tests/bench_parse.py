"""`make bench`: parse the big corpus dumps into IR plus graph; print MB/s, peak RSS and the ratio to XLA's parser.

A benchmark, not a test: targets are read off its output, never asserted in the suite. Each dump is parsed
in a fresh process so the peak RSS is that dump's alone.
"""

from __future__ import annotations

import argparse
import json
import lzma
import resource
import subprocess
import sys
import time
from pathlib import Path

BIG = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "big"
# XLA's own C++ parser (hlo_module_from_text through jaxlib) on gpt48: 2.1 s, 890 MB on this machine kind.
XLA_SECONDS = {"gpt48-cpu.after_optimizations.hlo.txt.xz": 2.1}


def measure(path: Path, repeat: int) -> dict:
    """Runs inside the child process."""
    from hloscan.hlo import gcpause
    from hloscan.hlo.parser import parse_text

    gcpause.FREEZE_AFTER_BUILD = repeat == 1  # as the CLI does; repeated runs must free the previous one

    text = lzma.open(path, "rt", encoding="utf-8").read() if path.suffix == ".xz" else path.read_text()
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        modules = parse_text(text, str(path))
        parsed = time.perf_counter()
        edges = sum(m.graph.number_of_edges() for m in modules)
        done = time.perf_counter()
        run = {"parse_s": parsed - start, "graph_s": done - parsed, "total_s": done - start}
        if best is None or run["total_s"] < best["total_s"]:
            best = run
        del modules
    return {
        "file": path.name,
        "mb": len(text.encode()) / 1e6,
        "instructions": text.count("\n  "),
        "edges": edges,
        **best,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("files", nargs="*", type=Path, help="dumps (default: ../shared/corpus/big/*)")
    args.add_argument("--repeat", type=int, default=1)
    args.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    opts = args.parse_args()
    if opts.child:
        print(json.dumps(measure(opts.child, opts.repeat)))
        return
    files = opts.files or sorted(BIG.glob("*.xz"))
    if not files:
        sys.exit(f"no benchmark dumps found in {BIG}")
    for path in files:
        out = subprocess.run([sys.executable, __file__, "--child", str(path), "--repeat", str(opts.repeat)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        line = (f"{r['file']}: {r['mb']:.1f} MB, {r['edges']} edges: parse {r['parse_s']:.2f} s + graph "
                f"{r['graph_s']:.2f} s = {r['total_s']:.2f} s ({r['mb'] / r['total_s']:.1f} MB/s), "
                f"peak RSS {r['peak_rss_mb']:.0f} MB")
        xla = XLA_SECONDS.get(r["file"])
        if xla:
            line += f"; {r['total_s'] / xla:.2f}x XLA's C++ parser ({xla} s; target <= 2x, RSS < 1500 MB)"
        print(line)


if __name__ == "__main__":
    main()
