"""What XLA calls its dump files: the compilation stage and the module a file name says."""

from __future__ import annotations

import re
from pathlib import Path

# Least to most optimised. "input" is the hand-written text given to the compiler (tpu-oracle's input.hlo).
STAGES = ("input", "before_optimizations", "after_optimizations", "after_codegen")

# XLA names dump files `module_<id>.<module name>.<stage>.txt` (GPU adds a platform tag such as
# `sm_8.0_gpu_after_optimizations`); tpu-oracle case folders hold bare `<stage>.txt`.
_STAGE_RE = re.compile(r"(?:^|[._])(before_optimizations|after_optimizations|after_codegen)\.txt(?:\.gz|\.xz)?$")
_MODULE_ID_RE = re.compile(r"^(module_\d+)\.")
INPUT_NAMES = ("input.hlo", "input.hlo.txt")


def stage_of(path: str) -> str | None:
    """The compilation stage a dump file name says, or None."""
    name = Path(path).name
    m = _STAGE_RE.search(name)
    return m.group(1) if m else None


def group_key(path: str, stage: str) -> str:
    p = Path(path)
    name = p.name
    m = _MODULE_ID_RE.match(name)
    if m:
        # The module id is unique per dump and survives platform tags in the stage part of the name.
        return str(p.parent / m.group(1))
    prefix = name[: _STAGE_RE.search(name).start()] if stage != "input" else ""
    return str(p.parent / prefix)


def stage_sibling(path: str, stage: str) -> str | None:
    """The dump file of the same module at another stage (`before_optimizations` -> `after_codegen`), when
    it exists beside `path`, compressed or not; None for a file whose name says no stage."""
    p = Path(path)
    m = _STAGE_RE.search(p.name)
    if not m:
        return None
    stem = p.name[: m.start(1)] + stage + ".txt"
    for candidate in (stem, stem + ".xz", stem + ".gz"):
        if (p.parent / candidate).is_file():
            return str(p.parent / candidate)
    return None
