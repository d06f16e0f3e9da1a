"""Run the compile worker in its own process: which python, the request, the timeout, the result.

Pure Python: this module never imports jax. It starts `worker.py` by its file path with the python that
has the tpu extra, so the worker also runs from a separate environment (`--python`, HLOSCAN_TPU_PYTHON)
where hloscan itself is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscan.hlo.ir import Module
from hloscan.hlo.signature import module_signature

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
    scoped_per_instr: dict[str, int] = field(default_factory=dict)
    kernels: list[dict[str, Any]] = field(default_factory=list)  # after_codegen's: name, op_name, body, bytes
    memory_analysis: dict[str, int] = field(default_factory=dict)
    mem_report_totals: dict[str, int] = field(default_factory=dict)
    compile_s: float = 0.0
    wall_s: float = 0.0
    device_kind: str = ""

    @property
    def libtpu(self) -> str:
        return self.versions.get("libtpu", "")

    @classmethod
    def from_json(cls, data: dict[str, Any], wall_s: float) -> "WorkerResult":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "wall_s"}
        return cls(**known, wall_s=wall_s)


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
    return {"hlo_text": text if text is not None else module.to_text(), "topology": topology,
            "num_partitions": num_partitions(module), "host_params": params, "host_results": results}


def run_worker(request: dict[str, Any], python: str, timeout: float) -> WorkerResult:
    """One compile in a fresh process; a crash, a hang past `timeout` or garbage output is one result."""
    env = {**os.environ, **TPU_ENV}
    start = time.perf_counter()
    try:
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
