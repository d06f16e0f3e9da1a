"""Run the compile worker in its own process: which python, the request, the timeout, the result.

Pure Python: this module never imports jax. It starts `worker.py` by its file path with the python that
has the tpu extra, so the worker also runs from a separate environment (`--python`, HLOSCAN_TPU_PYTHON)
where hloscan itself is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from hloscan.confirm.topology import libtpu_name
from hloscan.hlo.ir import Module
from hloscan.hlo.signature import module_signature

if TYPE_CHECKING:
    from hloscan.confirm.readback import CompiledKernel

WORKER = Path(__file__).with_name("worker.py")
DEFAULT_TIMEOUT = 900.0  # seconds per compile; the largest recorded train-step compile took 234 s
HOST_MEMORY_SPACE = 5  # S(5): pinned_host
NEEDS_EXTRA = ("hloscan confirm needs the tpu extra: pip install 'hloscan[tpu]' "
               "(from a checkout: pip install '.[tpu]')")
_PROBE = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('jax') and u.find_spec('libtpu') else 3)"
# libtpu must not ask a metadata server (there is no TPU VM) and may be loaded by several processes.
TPU_ENV = {"TPU_SKIP_MDS_QUERY": "1", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


class NoTpuPython(Exception):
    """No python with jax and libtpu was found (message: what to install or pass)."""


@dataclass
class WorkerResult:
    """What one compile said. `status`: compiled, compile_error, convert_error, unsupported, timeout, crashed."""

    status: str
    error: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    memory_analysis: dict[str, int] = field(default_factory=dict)
    compile_s: float = 0.0
    device_kind: str = ""
    device_count: int = 0  # devices the module was compiled for (its partitions)
    topology: str = ""  # as libtpu spelled it: v5e:2x2, tpu7x:2x2x1, ...
    wall_s: float = 0.0
    # Read back from the compiler's dump folder by hloscan (readback.py), not sent by the worker:
    kernels: list["CompiledKernel"] = field(default_factory=list)  # after_codegen's tpu_custom_calls
    mem_report_totals: dict[str, int] = field(default_factory=dict)  # memory space -> "Total bytes"
    unread: list[str] = field(default_factory=list)  # dump files hloscan could not read (figures absent)

    @property
    def libtpu(self) -> str:
        return self.versions.get("libtpu", "")

    @property
    def scoped_per_instr(self) -> dict[str, int]:
        """{after_codegen kernel name: used scoped VMEM bytes}, as the corpus MANIFEST records it."""
        return {k.name: k.scoped_bytes for k in self.kernels}

    @classmethod
    def from_json(cls, data: dict[str, Any], wall_s: float) -> "WorkerResult":
        sent = ("status", "error", "versions", "memory_analysis", "compile_s", "device_kind", "device_count",
                "topology")
        return cls(**{k: data[k] for k in sent if k in data}, wall_s=wall_s)


def tpu_python(explicit: str | None = None) -> str:
    """The python to compile with: --python, else $HLOSCAN_TPU_PYTHON, else this one if it has jax+libtpu."""
    for candidate, origin in ((explicit, "--python"), (os.environ.get("HLOSCAN_TPU_PYTHON"), "HLOSCAN_TPU_PYTHON")):
        if candidate:
            if not _has_extra(candidate):
                raise NoTpuPython(f"{origin} {candidate} has no jax/libtpu ({NEEDS_EXTRA})")
            return candidate
    if _has_extra(sys.executable):
        return sys.executable
    raise NoTpuPython(f"{NEEDS_EXTRA} (or pass --python / set HLOSCAN_TPU_PYTHON to a python that has it)")


def _has_extra(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def host_indices(module: Module) -> tuple[list[int], list[int]]:
    """@main argument and result numbers whose entry layout is in host memory (S(5)): the HLO->MLIR
    conversion drops memory spaces, and the worker puts them back. Results are numbered as the conversion
    flattens a tuple root: one per leaf."""
    sig = module_signature(module)
    params = sorted({p.index for p in sig.parameters if p.memory_space == HOST_MEMORY_SPACE})
    results = [o.index for o in sig.outputs if o.memory_space == HOST_MEMORY_SPACE]
    return params, results


def num_partitions(module: Module) -> int:
    try:
        return max(1, int(module.attr("num_partitions", "1") or 1))
    except ValueError:
        return 1


def request_for(module: Module, topology: str, text: str | None = None) -> dict[str, Any]:
    params, results = host_indices(module)
    return worker_request(text if text is not None else module.to_text(), topology, num_partitions(module),
                          params, results)


def worker_request(hlo_text: str, topology: str, partitions: int = 1, host_params: list[int] | None = None,
                   host_results: list[int] | None = None) -> dict[str, Any]:
    """What the worker is sent: the topology already spelled as libtpu wants it."""
    return {"hlo_text": hlo_text, "topology": libtpu_name(topology), "num_partitions": partitions,
            "host_params": host_params or [], "host_results": host_results or []}


def run_worker(request: dict[str, Any], python: str, timeout: float) -> WorkerResult:
    """One compile in a fresh process; a crash, a hang past `timeout` or garbage output is one result. The
    compiler dumps into a folder this process owns (removed here even when the worker is killed), and the
    figures are read from it with hloscan's readers."""
    # Imported here: the CLI imports this module for DEFAULT_TIMEOUT, and the readers' HLO parser would
    # otherwise be loaded by every command's start-up.
    from hloscan.confirm.readback import compiled_kernels, report_totals

    with tempfile.TemporaryDirectory(prefix="hloscan-confirm-") as dump:
        result = _run(request | {"dump_to": dump}, python, timeout)
        if result.status in ("compiled", "compile_error"):  # a failed compile still dumps what it reached
            result.kernels, result.unread = compiled_kernels(Path(dump))
            result.mem_report_totals = report_totals(Path(dump))
    return result


@contextlib.contextmanager
def _pipe_errors_raised() -> Iterator[None]:
    """While the request is written to a worker, a worker that died first must cost one result: the CLI lets
    SIGPIPE end the process quietly (`hloscan ... | head`), which would end the whole scan here instead of
    subprocess's BrokenPipeError, which it handles (seen as exit -13 when a crashing worker won the race)."""
    if not hasattr(signal, "SIGPIPE") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGPIPE, previous)


def _run(request: dict[str, Any], python: str, timeout: float) -> WorkerResult:
    env = {**os.environ, **TPU_ENV}
    start = time.perf_counter()
    try:
        with _pipe_errors_raised():
            done = subprocess.run([python, str(WORKER)], input=json.dumps(request), capture_output=True, text=True,
                                  timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return WorkerResult("timeout", f"the compile did not finish in {timeout:g} s (--timeout)",
                            wall_s=time.perf_counter() - start)
    wall = time.perf_counter() - start
    try:
        data = json.loads(done.stdout)
    except ValueError:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        return WorkerResult("crashed", f"the compile worker exited {done.returncode} without a result"
                            + (f": {tail}" if tail else ""), wall_s=wall)
    return WorkerResult.from_json(data, wall)
