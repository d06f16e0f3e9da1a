"""Groups the files of one module in a dump folder by compilation stage and plans which checks run on which file."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from hloscan.hlo.dump_names import INPUT_NAMES, STAGES, group_key, stage_of
from hloscan.lint.registry import Check

log = logging.getLogger(__name__)

# The stage a check declares, then the fall-backs in order. A check that wants pre-optimisation HLO
# (host offload: XLA's HostOffloader rewrites the evidence away) prefers the earliest text; "any" takes the
# most optimised one, which carries the most facts (layouts, tiling, measured Vmem).
PREFERENCES: dict[str, tuple[str, ...]] = {
    "input": ("input", "before_optimizations", "after_optimizations", "after_codegen"),
    "before_optimizations": ("before_optimizations", "input", "after_optimizations", "after_codegen"),
    "after_optimizations": ("after_optimizations", "after_codegen", "before_optimizations", "input"),
    "after_codegen": ("after_codegen", "after_optimizations", "before_optimizations", "input"),
    "any": ("after_codegen", "after_optimizations", "before_optimizations", "input"),
}

@dataclass
class ModuleGroup:
    """The files of one module: stage -> path. A lone file has the single stage None."""

    key: str
    files: dict[str | None, str] = field(default_factory=dict)

    def file_for(self, check: type[Check]) -> str | None:
        """The file a check runs on: its declared stage, else the nearest one available."""
        if None in self.files:
            return self.files[None]
        stage = getattr(check, "stage", "any")
        order = PREFERENCES.get(stage)
        if order is None:
            log.warning("check %s declares unknown stage %r; treating it as 'any'", check.code, stage)
            order = PREFERENCES["any"]
        for candidate in order:
            if candidate in self.files:
                return self.files[candidate]
        return None


def group_files(paths: Iterable[str]) -> list[ModuleGroup]:
    """Group dump files by module, keeping input order; files with no stage stay alone."""
    paths = list(paths)
    staged: dict[str, ModuleGroup] = {}
    order: list[ModuleGroup] = []
    stage_dirs = {str(Path(p).parent) for p in paths if stage_of(p)}
    for path in paths:
        stage = stage_of(path)
        if stage is None and Path(path).name in INPUT_NAMES and str(Path(path).parent) in stage_dirs:
            stage = "input"
        if stage is None:
            order.append(ModuleGroup(path, {None: path}))
            continue
        key = group_key(path, stage)
        group = staged.get(key)
        if group is None or stage in group.files:
            if group is not None:
                # Two files claim the same stage (e.g. several pass dumps): keep them apart, never drop one.
                key = f"{key}#{len(order)}"
            group = staged[key] = ModuleGroup(key)
            order.append(group)
        group.files[stage] = path
    return order


def group_stages(paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """path -> the stages its module group holds (a lone file: none). Checks read it to know whether the
    compiler went on past the stage they decide on (an after_optimizations dump means the compile succeeded)."""
    out: dict[str, tuple[str, ...]] = {}
    for group in group_files(paths):
        held = tuple(s for s in STAGES if s in group.files)
        for path in group.files.values():
            out[path] = held
    return out


def plan(paths: Iterable[str], checks: list[type[Check]]) -> dict[str, list[type[Check]]]:
    """path -> the checks to run on it, in input order; each check runs once per module group."""
    paths = list(paths)
    out: dict[str, list[type[Check]]] = {p: [] for p in paths}
    for group in group_files(paths):
        for check in checks:
            target = group.file_for(check)
            if target is not None:
                out[target].append(check)
    return out
