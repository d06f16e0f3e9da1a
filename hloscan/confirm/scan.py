"""`hloscan confirm PATH...`: the static scan, then each module compiled once (from a dump folder, the
before_optimizations file: what the compiler was given), its findings compared with the compiler's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hloscan.confirm.module import ModuleConfirmation, confirm_module
from hloscan.confirm.runner import DEFAULT_TIMEOUT
from hloscan.confirm.runner import num_partitions
from hloscan.confirm.topology import topology_for
from hloscan.hlo.dump_names import group_key, stage_of
from hloscan.hlo.loader import LoadedFile
from hloscan.lint.config import Config
from hloscan.lint.engine import ScanResult
from hloscan.lint.finding import Finding
from hloscan.lint.scan import scan

# Which file of a module's dump is compiled: what the compiler was given first, then what it made.
_COMPILE_ORDER = ("before_optimizations", "input", "after_optimizations", "after_codegen")


@dataclass
class Confirmation:
    result: ScanResult  # the static scan, its findings replaced by the compared ones
    modules: list[ModuleConfirmation] = field(default_factory=list)

    @property
    def failed(self) -> list[ModuleConfirmation]:
        return [m for m in self.modules if m.failed]

    @property
    def rejected(self) -> list[ModuleConfirmation]:
        return [m for m in self.modules if m.verdict is not None and not m.verdict.ok]


def _group(path: str) -> str:
    stage = stage_of(path)
    return group_key(path, stage) if stage else path


def files_to_compile(files: list[LoadedFile]) -> list[LoadedFile]:
    """One file per module of a dump: before_optimizations when the dump has it."""
    best: dict[str, LoadedFile] = {}
    for loaded in files:
        if not loaded.ok or not loaded.modules:
            continue
        key = _group(loaded.path)
        if key not in best or _rank(loaded.path) < _rank(best[key].path):
            best[key] = loaded
    return [f for f in files if any(f is b for b in best.values())]


def _rank(path: str) -> int:
    stage = stage_of(path) or ("input" if Path(path).name.startswith("input.") else None)
    return _COMPILE_ORDER.index(stage) if stage in _COMPILE_ORDER else len(_COMPILE_ORDER)


def confirm_paths(paths: list[str], config: Config, python: str, *, tpu: str, topology: str | None = None,
                  timeout: float = DEFAULT_TIMEOUT, each: Callable[[ModuleConfirmation], None] | None = None,
                  jobs: int = 1) -> Confirmation:
    result = scan(paths, config, jobs=jobs, keep_modules=True)
    out = Confirmation(result)
    compared: dict[int, Finding] = {}
    replaced: list[Finding] = []
    for loaded in files_to_compile(result.files):
        for module in loaded.modules:
            static = [f for f in result.findings if f.module == module.name and _group(f.path) == _group(loaded.path)]
            chosen = topology or topology_for(tpu, num_partitions(module))
            done = confirm_module(module, loaded.path, static, chosen, python, timeout)
            compared.update({id(f): f for f in static})
            replaced.extend(done.findings)
            out.modules.append(done)
            if each is not None:
                each(done)
    result.findings = sorted([f for f in result.findings if id(f) not in compared] + replaced, key=Finding.sort_key)
    return out
