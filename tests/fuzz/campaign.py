"""Long seeded fuzz campaign: `python -m tests.fuzz.campaign --minutes N --seed S` (the `make fuzz` entry)."""

from __future__ import annotations

import argparse
import hashlib
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import cli_driver, mutators
from .minimise import minimise
from .oracle import Outcome, peak_memory, run_input, warm_up
from .seeds import seed_or_builtin

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fuzz"
SLOW_MS_PER_KB = 50.0  # the bar: anything slower after warm-up is a performance bug
HANG_SECONDS = 60  # one input taking this long is reported as a hang
MEMORY_FLOOR = 64 * 1024  # below this, fixed costs (lark tables, caches) dominate the multiple
MEMORY_EVERY = 20  # tracemalloc slows Python ~2x, so only every Nth input (and every big one) is traced
CLI_EVERY = 50  # the CLI end to end is ~0.3 s per input, so only every Nth input goes through it


class Hang(Exception):
    """Raised by SIGALRM when one input runs longer than HANG_SECONDS."""


@dataclass
class Stats:
    inputs: int = 0
    cli_runs: int = 0
    bugs: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # signature -> (detail, input)
    slowest: tuple[float, int] = (0.0, 0)  # (ms per KB, size)
    slowest_input: bytes = b""
    memory: tuple[float, int] = (0.0, 0)  # (peak / max(size, floor), size)

    def report(self) -> str:
        hangs = sum(1 for s in self.bugs if s.startswith("hang") or s.startswith("slow"))
        return "\n".join([
            f"inputs run:              {self.inputs} (+{self.cli_runs} through every CLI command)",
            f"crashes found:           {len(self.bugs) - hangs}",
            f"hangs/slow found:        {hangs}",
            f"slowest input per KB:    {self.slowest[0]:.2f} ms/KB ({self.slowest[1]} bytes)",
            f"largest memory multiple: {self.memory[0]:.1f}x input ({self.memory[1]} bytes)",
        ])


def _on_alarm(signum, frame):
    raise Hang()


def _signature_failures(outcome: Outcome) -> dict[str, str]:
    return {f.signature(): f"[{f.stage}] owner={f.owner}\n{f.detail}" for f in outcome.failures}


def _one_input(data: bytes, stats: Stats) -> None:
    signal.alarm(HANG_SECONDS)
    try:
        outcome = run_input(data)
    except Hang:
        _record(stats, "hang|run_input", f"no result after {HANG_SECONDS} s", data)
        return
    finally:
        signal.alarm(0)
    stats.inputs += 1
    for sig, detail in _signature_failures(outcome).items():
        _record(stats, sig, detail, data)
    rate = outcome.ms_per_kb
    if rate > stats.slowest[0]:  # a record is timed again: the steady-state rate is what counts
        rate = min(rate, run_input(data).ms_per_kb)
    if rate > stats.slowest[0]:
        stats.slowest, stats.slowest_input = (rate, len(data)), data
    if rate > SLOW_MS_PER_KB and run_input(data).ms_per_kb > SLOW_MS_PER_KB:
        _record(stats, f"slow|{max(outcome.seconds, key=outcome.seconds.get)}", f"{rate:.1f} ms/KB", data)
    if stats.inputs % MEMORY_EVERY == 0 or len(data) > MEMORY_FLOOR:
        multiple = peak_memory(data) / max(len(data), MEMORY_FLOOR)
        if multiple > stats.memory[0]:
            stats.memory = (multiple, len(data))


def _cli_input(data: bytes, folder: str, stats: Stats) -> None:
    path = cli_driver.write_input(folder, "input.hlo", data)
    good = cli_driver.write_input(folder, "good.hlo", seed_or_builtin(0))
    for run in cli_driver.run_all_commands([path, good]):
        problem = run.problem() or cli_driver.json_problem(run)
        if problem:
            last = problem.strip().splitlines()[-1][:160]
            _record(stats, f"cli:{run.args[0]}|{last}", problem, data)
    stats.cli_runs += 1


def _record(stats: Stats, signature: str, detail: str, data: bytes) -> None:
    if signature not in stats.bugs or len(data) < len(stats.bugs[signature][1]):
        stats.bugs[signature] = (detail, data)


def _still_fails(signature: str):
    def check(candidate: bytes) -> bool:
        if signature.startswith(("slow", "hang", "cli:")):
            return False  # not minimised: re-timing each candidate would take too long
        return signature in _signature_failures(run_input(candidate))

    return check


def save_regressions(stats: Stats) -> list[Path]:
    """Minimise every bug's input and write it to fixtures/fuzz/ (named by a hash of its signature)."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    saved = []
    for signature, (detail, data) in sorted(stats.bugs.items()):
        small = minimise(data, _still_fails(signature))
        name = hashlib.sha1(signature.encode()).hexdigest()[:12]
        path = FIXTURES / f"{name}.hlo"
        path.write_bytes(small)
        (FIXTURES / f"{name}.txt").write_text(f"{signature}\n\n{detail}\n", encoding="utf-8")
        saved.append(path)
    return saved


def run(minutes: float, seed: int, cli: bool = True, out=sys.stdout) -> Stats:
    rng = random.Random(seed)
    stats = Stats()
    warm_up()
    signal.signal(signal.SIGALRM, _on_alarm)
    deadline = time.monotonic() + minutes * 60
    with tempfile.TemporaryDirectory() as folder:
        while time.monotonic() < deadline:
            data = mutators.mutate(seed_or_builtin(rng.randrange(1 << 30)), rng, allow_big=rng.random() < 0.03)
            _one_input(data, stats)
            if cli and stats.inputs % CLI_EVERY == 0:
                _cli_input(data, folder, stats)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cli", action="store_true", help="skip the end-to-end CLI runs")
    parser.add_argument("--no-save", action="store_true", help="do not write minimised inputs to fixtures/fuzz/")
    args = parser.parse_args(argv)
    stats = run(args.minutes, args.seed, cli=not args.no_cli)
    print(stats.report())
    Path(tempfile.gettempdir(), "hloscan-fuzz-slowest.hlo").write_bytes(stats.slowest_input)
    for signature, (detail, _) in sorted(stats.bugs.items()):
        print(f"\n--- {signature}\n{detail[-1200:]}")
    if stats.bugs and not args.no_save:
        for path in save_regressions(stats):
            print(f"saved {path}")
    return 1 if stats.bugs else 0


if __name__ == "__main__":
    sys.exit(main())
