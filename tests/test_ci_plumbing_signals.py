"""Issue 11 item 8: Ctrl-C during a parallel scan stops promptly with exit 130; SIGTERM exits 143; worker
processes never outlive the main process (not even a kill -9)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from corpus import CORPUS, require_path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals and /proc")

BIG = CORPUS / "big" / "gpt16-tpu-v5e.after_optimizations.hlo.txt.xz"
COPIES = 16  # about 8 s of work on 2 cores: far longer than the 3 s allowed to stop


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def busy_scan(tmp_path):
    """A `hloscan check -j 2` in its own process group, with both workers busy (`--no-cache`: copies of one dump
    scanned by an earlier test were answered from the result cache and the run ended before its Ctrl-C, exit 0)."""
    source = require_path(BIG)
    folder = tmp_path / "dumps"
    folder.mkdir()
    for i in range(COPIES):
        shutil.copy(source, folder / f"m{i}.hlo.txt.xz")
    proc = subprocess.Popen([sys.executable, "-m", "hloscan", "check", "--no-cache", "-j", "2", str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 30
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = _children(proc.pid)
    time.sleep(1.0)  # the workers are inside their first batch
    yield proc, workers
    for pid in [proc.pid, *workers]:  # clean up only what this test started
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    proc.communicate()


def _wait(proc, timeout: float) -> tuple[int, float, str]:
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return -999, time.monotonic() - start, ""
    return proc.returncode, time.monotonic() - start, err.decode("utf-8", "replace")


def _workers_gone(workers: list[int]) -> bool:
    deadline = time.monotonic() + 3
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(w) for w in workers)


def test_ctrl_c_stops_promptly_with_130(busy_scan):
    proc, workers = busy_scan
    assert len(workers) == 2
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends: the whole foreground group
    code, took, err = _wait(proc, timeout=10)
    assert code == 130, err
    assert took < 3, f"took {took:.1f} s to stop"
    assert "interrupted" in err and "Traceback" not in err
    assert _workers_gone(workers)


def test_sigterm_to_main_process_exits_143_and_stops_workers(busy_scan):
    proc, workers = busy_scan
    os.kill(proc.pid, signal.SIGTERM)
    code, took, err = _wait(proc, timeout=10)
    assert code == 143, err
    assert took < 3
    assert _workers_gone(workers)


def test_workers_die_with_a_killed_parent(busy_scan):
    proc, workers = busy_scan
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
    assert _workers_gone(workers)
