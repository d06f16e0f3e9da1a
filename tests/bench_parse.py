"""`make bench`: a whole `hloscan check` and `hloscan.load` + graph on the big dumps, against XLA's own parser.

A benchmark, not a test: targets are read off its output, never asserted in the suite. Every measurement runs
in a fresh process, through the public entry points with no special settings, so the times include the
interpreter start and the peak RSS is that run's alone. Each line prints the best of --repeat runs.

Inputs: ../shared/corpus/big/*.xz, decompressed once into build/bench/ (every tool reads the same plain text,
as a user's --xla_dump_to folder holds it), plus a larger input built reproducibly from gpt48 (BIG_COPIES copies of
its computations, names suffixed, in one module: >= 200 MB and >= 1.4 M instructions) to show how time and
memory grow. XLA's C++ parser (jaxlib's `hlo_module_from_text`) is timed in the same run when jaxlib is
importable here or in the interpreter named by HLOSCAN_XLA_PYTHON / --xla-python; otherwise the figure
recorded on this machine kind is printed instead (marked "recorded"). jax is never a dependency.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
BIG = CORPUS / "big"
BUILD = ROOT / "build" / "bench"
GPT48 = "gpt48-cpu.after_optimizations.hlo.txt.xz"
BIG_COPIES = 5
SMALL_COUNT, SMALL_MAX_BYTES = 1000, 256 * 1024  # the folder of small dumps the cache is measured on
# XLA's C++ parser on gpt48 on an idle 2-core machine of this kind: 1.9-2.0 s, 890 MB (issue 13).
RECORDED_XLA = {GPT48.removesuffix(".xz"): (1.95, 890.0)}

# Runs in a child: `hloscan.load` + the graph of every module, timed from before the import.
_LOAD_CHILD = """
import json, resource, sys, time
start, cpu = time.perf_counter(), time.process_time()
import hloscan
modules = hloscan.load(sys.argv[1])
edges = sum(m.graph.number_of_edges() for m in modules)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "edges": edges,
                  "instructions": sum(m.instruction_count for m in modules)}))
"""

# Runs in a child with jaxlib: XLA's parser alone on the decompressed text (read time excluded).
_XLA_CHILD = """
import json, lzma, sys, time
path = sys.argv[1]
text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
from jax._src.lib import xla_client
start, cpu = time.perf_counter(), time.process_time()
xla_client.hlo.hlo_module_from_text(text)
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
"""

# Runs in a child with jaxlib: XLA's parser on many files in one process (a list of paths on stdin; read and
# decompression time excluded; a file XLA rejects counts its time to the error). XLA aborts the process on
# some invalid inputs, so each parse runs in a fork of this process and reports its own parse time: the
# sum is the parse time without the forks (a file that kills its fork is counted as crashed). NOTE: the forks'
# copy-on-write page faults land in that time, so this figure overstates XLA's (on the corpus: 103 s here, while
# 1,000 of the same small files take 0.6 s in one process without forks); trust it only as an upper bound.
_XLA_MANY_CHILD = """
import gzip, json, lzma, os, struct, sys, time
paths = sys.stdin.read().splitlines()
def read(path):
    opener = lzma.open if path.endswith(".xz") else gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")
texts = [read(p) for p in paths]
from jax._src.lib import xla_client
seconds = cpu = 0.0
failed = 0
for text in texts:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        start, used = time.perf_counter(), time.process_time()
        try:
            xla_client.hlo.hlo_module_from_text(text)
        except Exception:
            pass
        os.write(w, struct.pack("dd", time.perf_counter() - start, time.process_time() - used))
        os._exit(0)
    os.close(w)
    data = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    if len(data) == 16:
        wall, used = struct.unpack("dd", data)
        seconds, cpu = seconds + wall, cpu + used
    else:
        failed += 1
print(json.dumps({"seconds": seconds, "cpu": cpu, "failed": failed}))
"""


def run_child(argv: list[str], env: dict | None = None, accept: tuple[int, ...] = (0, 1)) -> tuple[float, float, str, float]:
    """Wall seconds, peak RSS (MB, this child alone, from wait4), stdout and CPU seconds of one child."""
    import tempfile

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        if proc.returncode not in accept:
            err.seek(0)
            raise SystemExit(f"{argv[:3]} failed ({proc.returncode}): {err.read().decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out.decode(), usage.ru_utime + usage.ru_stime


def best(runs: list[dict]) -> dict:
    """The fastest run (wall time), with the highest peak RSS of all runs."""
    fastest = dict(min(runs, key=lambda r: r["seconds"]))
    fastest["cpu"] = min(r["cpu"] for r in runs)
    fastest["rss"] = max(r["rss"] for r in runs)
    return fastest


def _user_env() -> dict:
    """The environment of a user's shell: Python's bytecode cache on, as it is by default (a sandbox setting
    PYTHONDONTWRITEBYTECODE makes every run compile hloscan's modules again, 0.13 s; an installed wheel has
    them compiled at install time). The first of the repeated runs writes the cache."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure_check(path: Path | list[Path], repeat: int, accept: tuple[int, ...] = (0, 1)) -> dict:
    """A user's whole `hloscan check` process, cold (--no-cache): interpreter start, read, parse, every
    check, the JSON report. `accept`: the exit codes that are no failure of the run (the corpus holds
    inputs that must fail: exit 2)."""
    paths = [str(p) for p in (path if isinstance(path, list) else [path])]
    return measure_cli(["check", "--no-cache", "--format", "json", "--exit-zero", *paths], repeat, accept=accept)


def measure_cli(args: list[str], repeat: int, env: dict | None = None, accept: tuple[int, ...] = (0, 1)) -> dict:
    """A whole `hloscan ARGS...` process (best of `repeat`)."""
    hloscan = str(Path(sys.executable).with_name("hloscan"))
    runs = []
    for _ in range(repeat):
        wall, rss, _out, cpu = run_child([hloscan, *args], env={**_user_env(), **(env or {})}, accept=accept)
        runs.append({"seconds": wall, "rss": rss, "cpu": cpu})
    return best(runs)


def measure_cached(paths: list[Path], repeat: int) -> tuple[dict, dict]:
    """`hloscan check` into an empty result cache (the first run: it scans and writes every entry), then
    again on the unchanged files (answered from the cache); each repetition starts from an empty cache."""
    import tempfile

    args = ["check", "--format", "json", "--exit-zero", *map(str, paths)]
    firsts, warms = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="hloscan-bench-cache-") as folder:
            env = {"HLOSCAN_CACHE_DIR": folder}
            firsts.append(measure_cli(args, 1, env))
            warms.append(measure_cli(args, 1, env))
    return best(firsts), best(warms)


def measure_load(path: Path, repeat: int) -> dict:
    """The public API in a fresh process: seconds from before `import hloscan` to the last graph built; CPU
    from the process's rusage, so it counts the forked reader's child too (and the interpreter's exit)."""
    runs = []
    for _ in range(repeat):
        _wall, rss, out, cpu = run_child([sys.executable, "-c", _LOAD_CHILD, str(path)], env=_user_env())
        runs.append({**json.loads(out), "rss": rss, "cpu": cpu})
    return best(runs)


def xla_python(option: str | None) -> str | None:
    """An interpreter that can import jaxlib: --xla-python, HLOSCAN_XLA_PYTHON, or this one."""
    for candidate in (option, os.environ.get("HLOSCAN_XLA_PYTHON"), sys.executable):
        if not candidate:
            continue
        probe = subprocess.run([candidate, "-c", "from jax._src.lib import xla_client; xla_client.hlo.hlo_module_from_text"],
                               capture_output=True,
                               env=_xla_env())
        if probe.returncode == 0:
            return candidate
    return None


def _xla_env() -> dict:
    # libtpu (pulled in by jax[tpu]) must not query a metadata server nor lock out other processes.
    return {**os.environ, "TPU_SKIP_MDS_QUERY": "1", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
            "JAX_PLATFORMS": "cpu"}


def measure_xla_many(python: str | None, paths: list[str], repeat: int) -> dict | None:
    """XLA's parser on every file hloscan scans under `paths`, in one process."""
    if python is None:
        return None
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([python, "-c", _XLA_MANY_CHILD], input="\n".join(paths), capture_output=True,
                              text=True, env=_xla_env())
        if proc.returncode != 0:
            raise SystemExit(f"XLA's parser on many files failed: {proc.stderr[-2000:]}")
        runs.append({**json.loads(proc.stdout), "rss": 0.0})
    return {**best(runs), "how": "same run"}


def measure_xla(python: str | None, path: Path, repeat: int) -> dict | None:
    if python is None:
        recorded = RECORDED_XLA.get(path.name)
        return {"seconds": recorded[0], "cpu": recorded[0], "rss": recorded[1], "how": "recorded"} if recorded else None
    runs = []
    for _ in range(repeat):
        _wall, rss, out, _cpu = run_child([python, "-c", _XLA_CHILD, str(path)], env=_xla_env())
        runs.append({**json.loads(out), "rss": rss})
    return {**best(runs), "how": "same run"}


# ----------------------------------------------------------------------------------------------------
# The larger input


_NAME = re.compile(r"%([A-Za-z_][A-Za-z0-9_.\-]*)")


def decompressed(path: Path) -> Path:
    """A corpus dump as the user has it (a plain text file from --xla_dump_to), in build/bench/: every tool
    here, XLA's parser included, reads the same uncompressed file, so no figure includes xz decoding."""
    if path.suffix != ".xz":
        return path
    out = BUILD / path.stem
    if not out.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        with lzma.open(path, "rb") as source, open(tmp, "wb") as target:
            while chunk := source.read(1 << 24):
                target.write(chunk)
        tmp.rename(out)
    return out


def build_large(copies: int = BIG_COPIES) -> Path:
    """gpt48 with its computations repeated `copies` times in one module (copy k's names get `__rK`, its
    ENTRY becomes an ordinary computation): the same kind of text, `copies` times as much of it."""
    out = BUILD / f"gpt48x{copies}.hlo.txt"
    if out.exists():
        return out
    text = lzma.open(BIG / GPT48, "rt", encoding="utf-8").read()
    first = re.search(r"^(?:ENTRY[ \t]+)?%", text, re.M).start()  # the computations, after header and tables
    body = text[first:]
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        for k in range(1, copies):
            copy = _NAME.sub(lambda m, k=k: f"%{m.group(1)}__r{k}", body)
            handle.write("\n" + re.sub(r"^ENTRY ", "", copy, flags=re.M))
    tmp.rename(out)
    return out


def build_small(count: int = SMALL_COUNT) -> Path:
    """A folder of `count` small dumps (at most SMALL_MAX_BYTES each): the first ones hloscan finds in the
    corpus (big/ aside), copied under numbered names so that each is a module of its own."""
    from hloscan.hlo.loader import discover

    out = BUILD / f"small{count}"
    if (out / ".complete").exists():
        return out
    folders = [p for p in sorted(CORPUS.iterdir()) if p.is_dir() and p.name != "big"]
    found = [Path(p) for p, skipped in discover(folders) if skipped is None]
    chosen = [p for p in found if p.stat().st_size <= SMALL_MAX_BYTES][:count]
    if len(chosen) < count:
        raise SystemExit(f"only {len(chosen)} small dumps in {CORPUS}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for i, source in enumerate(chosen):
        shutil.copyfile(source, out / f"{i:04d}-{source.name}")
    (out / ".complete").touch()
    return out


def scanned_files(paths: list[Path]) -> list[str]:
    """The files `hloscan check PATHS...` scans (what XLA's parser is given for the same work)."""
    from hloscan.hlo.loader import discover

    return [p for p, skipped in discover(paths) if skipped is None]


def entry_root(path: Path) -> str:
    """The ROOT instruction of the dump's ENTRY computation (the instruction `graph --around` draws)."""
    text = path.read_text(encoding="utf-8")
    entry = re.search(r"^ENTRY ", text, re.M)
    return re.compile(r"^\s*ROOT %?([\w.\-]+)", re.M).search(text, entry.start()).group(1)


def command_lines(path: Path, repeat: int) -> None:
    """Every command that reads a dump (signature, memory and diff only its ENTRY computation), as a ratio to a
    cold `check` of the same file in this run."""
    p = str(path)
    graph = str(BUILD / "bench-graph.dot")
    commands = [("check --no-cache", ["check", "--no-cache", "--format", "json", "--exit-zero", p]),
                ("parse", ["parse", p]), ("signature", ["signature", p]), ("memory", ["memory", p]),
                ("hbm", ["hbm", p]), ("vmem", ["vmem", p]), ("diff", ["diff", p, p]),
                ("graph --around", ["graph", p, "--around", entry_root(path), "-o", graph])]
    check = None
    print(f"commands on {path.name} (whole processes; ratio to `check --no-cache` of the same file, this run):")
    for name, args in commands:
        run = measure_cli(args, repeat)
        check = check or run
        print(f"  {name}: {run['seconds']:.2f} s (CPU {run['cpu']:.2f} s, peak RSS {run['rss']:.0f} MB): "
              f"{run['seconds'] / check['seconds']:.2f}x check", flush=True)


def cache_lines(label: str, paths: list[Path], xla: dict | None, repeat: int) -> None:
    first, warm = measure_cached(paths, repeat)
    line = (f"cache, {label}: first run {first['seconds']:.2f} s (CPU {first['cpu']:.2f} s), unchanged re-run "
            f"{warm['seconds']:.2f} s (CPU {warm['cpu']:.2f} s, peak RSS {warm['rss']:.0f} MB): "
            f"{warm['seconds'] / first['seconds']:.2f}x the first run")
    if xla is not None:
        line += f"; XLA parser {xla['seconds']:.2f} s ({xla['how']}): re-run {warm['seconds'] / xla['seconds']:.2f}x"
    print(line, flush=True)


def many_files_line(label: str, paths: list[Path], python: str | None, repeat: int,
                    accept: tuple[int, ...] = (0, 1)) -> dict | None:
    """A cold `check` of many files against XLA's parser on the same files in one process."""
    files = scanned_files(paths)
    megabytes = sum(os.path.getsize(f) for f in files) / 1e6
    check = measure_check(paths, repeat, accept)
    xla = measure_xla_many(python, files, repeat)
    line = (f"{label}: {len(files)} files, {megabytes:.1f} MB: check --no-cache {check['seconds']:.2f} s "
            f"(CPU {check['cpu']:.2f} s, peak RSS {check['rss']:.0f} MB)")
    if xla is not None:
        line += (f"; XLA parser {xla['seconds']:.2f} s (CPU {xla['cpu']:.2f} s, {xla['failed']} crashed it, one process, "
                 f"{xla['how']}): check {check['seconds'] / xla['seconds']:.2f}x (CPU {check['cpu'] / xla['cpu']:.2f}x)")
    print(line, flush=True)
    return xla


# ----------------------------------------------------------------------------------------------------


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    args.add_argument("files", nargs="*", type=Path, help="dumps (default: ../shared/corpus/big/* and the larger input)")
    args.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "3")))
    args.add_argument("--xla-python", default=None, help="an interpreter with jaxlib (default: HLOSCAN_XLA_PYTHON)")
    args.add_argument("--no-large", action="store_true", help="skip the larger input")
    args.add_argument("--no-commands", action="store_true", help="skip the per-command figures on gpt48")
    args.add_argument("--no-cache-lines", action="store_true", help="skip the result cache's figures")
    args.add_argument("--no-corpus", action="store_true", help="skip the check of every corpus folder")
    opts = args.parse_args()
    files = [decompressed(f) for f in (opts.files or sorted(BIG.glob("*.xz")))]
    if not opts.files and not opts.no_large and (BIG / GPT48).exists():
        files.append(build_large())
    if not files:
        sys.exit(f"no benchmark dumps found in {BIG}")
    python = xla_python(opts.xla_python)
    print(f"best of {opts.repeat}; XLA's parser: {'measured with ' + python if python else 'recorded figures'}; "
          f"load average before: {_load_average()} ({os.cpu_count()} cores)")
    rows, xla_by_name = [], {}
    for path in files:
        check = measure_check(path, opts.repeat)
        load = measure_load(path, opts.repeat)
        xla = measure_xla(python, path, opts.repeat)
        mb = path.stat().st_size / 1e6 if path.suffix != ".xz" else _text_mb(path)
        line = (f"{path.name}: {mb:.1f} MB, {load['instructions']} instructions: "
                f"check {check['seconds']:.2f} s (CPU {check['cpu']:.2f} s, peak RSS {check['rss']:.0f} MB), "
                f"load+graph {load['seconds']:.2f} s (CPU {load['cpu']:.2f} s, peak RSS {load['rss']:.0f} MB)")
        if xla is not None:
            line += (f"; XLA parser {xla['seconds']:.2f} s (CPU {xla['cpu']:.2f} s, RSS {xla['rss']:.0f} MB, "
                     f"{xla['how']}): check {check['seconds'] / xla['seconds']:.2f}x "
                     f"(CPU {check['cpu'] / xla['cpu']:.2f}x), load+graph {load['seconds'] / xla['seconds']:.2f}x "
                     f"(CPU {load['cpu'] / xla['cpu']:.2f}x)")
        print(line, flush=True)
        rows.append((path.name, load["instructions"], check, load))
        xla_by_name[path.name] = xla
    if len(rows) >= 2:
        # The larger input against the dump it was built from (same kind of text), else smallest vs largest.
        small = next((r for r in rows if r[0] == GPT48.removesuffix(".xz")), min(rows, key=lambda r: r[1]))
        large = max(rows, key=lambda r: r[1])
        if small[1] < large[1]:
            print(f"scaling {small[0]} -> {large[0]}: instructions x{large[1] / small[1]:.2f}, "
                  f"check CPU x{large[2]['cpu'] / small[2]['cpu']:.2f}, check RSS x{large[2]['rss'] / small[2]['rss']:.2f}, "
                  f"load+graph CPU x{large[3]['cpu'] / small[3]['cpu']:.2f}, "
                  f"load RSS x{large[3]['rss'] / small[3]['rss']:.2f}")
    gpt48 = next((f for f in files if f.name == GPT48.removesuffix(".xz")), None)
    if gpt48 is not None and not opts.no_commands:
        command_lines(gpt48, opts.repeat)
    if not opts.no_cache_lines and CORPUS.is_dir():
        small = build_small()
        small_xla = many_files_line(f"{SMALL_COUNT} small dumps ({small.relative_to(ROOT)})", [small], python,
                                    opts.repeat)
        cache_lines(f"{SMALL_COUNT} small dumps", [small], small_xla, opts.repeat)
        if gpt48 is not None:
            cache_lines(gpt48.name, [gpt48], xla_by_name.get(gpt48.name), opts.repeat)
    if not opts.no_corpus and CORPUS.is_dir():
        folders = [p for p in sorted(CORPUS.iterdir()) if p.is_dir()]
        many_files_line(f"every corpus folder ({', '.join(p.name for p in folders)})", folders, python, opts.repeat,
                        accept=(0, 1, 2))  # xla-parser-invalid's files fail by design
    print(f"load average after: {_load_average()}")


def _load_average() -> str:
    """The 1, 5 and 15 minute load averages: a figure measured on a busy machine says so."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _text_mb(path: Path) -> float:
    with lzma.open(path, "rb") as handle:
        size = 0
        while chunk := handle.read(1 << 24):
            size += len(chunk)
    return size / 1e6


if __name__ == "__main__":
    main()
