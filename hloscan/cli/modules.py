"""Which modules of a dump a command looks at: `--module NAME`, and matching the modules of two dumps by
name and compilation stage (`hloscan diff A_DIR B_DIR`).

An `--xla_dump_to` folder holds every jit of the run: `jit_convert_element_type`, `jit_iota`, ... before the
program itself, each at two or more stages. Comparing "the first module" of two such folders compares a
helper jit; modules are matched by (name, stage, occurrence) instead, and the unmatched ones are named.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass

import click

from hloscan.cli.main import loading
from hloscan.hlo.dump_names import STAGES, stage_of
from hloscan.hlo.ir import Module
from hloscan.hlo.loader import discover
from hloscan.lint.scan import Inputs, collect

EXIT_ERROR = 2


@dataclass(frozen=True)
class DumpModule:
    """One module of a dump with the file it came from and that file's compilation stage (None: unknown)."""

    path: str
    stage: str | None
    module: Module

    @property
    def name(self) -> str:
        return self.module.name

    def describe(self) -> str:
        return f"{self.name} ({self.stage or 'no stage'}, {self.path})"


def load_modules_or_exit(path: str, entry_only: bool = False) -> list[DumpModule]:
    """Every module of a file or dump folder with its file and stage; an unreadable file prints HLO001 and
    exits 2; no module at all exits 2. `entry_only`: for commands that read only the entry signature."""
    modules: list[DumpModule] = []
    for loaded in loading([file for file, skipped in discover([path]) if not skipped], entry_only=entry_only):
        file = loaded.path
        if loaded.error is not None:
            click.echo(loaded.error.format(), err=True)
            sys.exit(EXIT_ERROR)
        modules.extend(DumpModule(file, stage_of(file), m) for m in loaded.modules)
    if not modules:
        click.echo(f"{path}: no HLO module found", err=True)
        sys.exit(EXIT_ERROR)
    return modules


def select_modules(path: str, modules: list[DumpModule], name: str | None) -> list[DumpModule]:
    """The modules named `name` (exact, or a shell pattern such as 'jit_train*'); none matching exits 2
    with the names there are."""
    refuse_unmatched(path, [m.name for m in modules], name)
    return [m for m in modules if module_matches(m.name, name)]


MODULE_OPTION = click.option("--module", "module_name", default=None, metavar="NAME",
                             help="Only the modules with this name (a shell pattern such as 'jit_train*' works), "
                                  "e.g. the program in an --xla_dump_to folder.")
STAGE_OPTION = click.option("--stage", "stage", type=click.Choice(list(STAGES)), default=None,
                            help="Only the dump files of this compilation stage (by their file name).")


def module_matches(name: str | None, pattern: str | None) -> bool:
    return pattern is None or name is None or name == pattern or fnmatch.fnmatchcase(name, pattern)


def other_stage(path: str, stage: str | None) -> bool:
    """A dump file of another stage than `--stage` asks for (files with no stage in their name are kept)."""
    found = stage_of(path)
    return stage is not None and found is not None and found != stage


def stage_inputs(paths: tuple[str, ...], stage: str | None) -> Inputs:
    """The files a scan of `paths` reads, less the dump files of another stage than `--stage` (listed as
    skipped, with why)."""
    inputs = collect(paths)
    if stage is not None:
        inputs.skipped += [(f, f"another stage than --stage {stage}") for f in inputs.files if other_stage(f, stage)]
        inputs.files = [f for f in inputs.files if not other_stage(f, stage)]
    return inputs


def refuse_unmatched(label: str, names: list[str], pattern: str | None) -> None:
    """`--module` that names no module of the input: exit 2 with the names there are."""
    if pattern is None or any(module_matches(n, pattern) for n in names):
        return
    names = sorted(set(names))
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    click.echo(f"{label}: no module named {pattern!r}; modules: {shown}", err=True)
    sys.exit(EXIT_ERROR)


# ---------------------------------------------------------------------------------------------- matching


@dataclass
class Matching:
    """Modules of OLD and NEW paired by name, stage and occurrence; the rest unmatched."""

    pairs: list[tuple[DumpModule, DumpModule]]
    only_old: list[DumpModule]
    only_new: list[DumpModule]


def _key(modules: list[DumpModule]) -> dict[tuple[str, str | None, int], DumpModule]:
    """(name, stage, n-th module of that name and stage): the same jit can run several times in one dump."""
    seen: dict[tuple[str, str | None], int] = {}
    out = {}
    for m in modules:
        n = seen.get((m.name, m.stage), 0)
        seen[(m.name, m.stage)] = n + 1
        out[(m.name, m.stage, n)] = m
    return out


def match_modules(old: list[DumpModule], new: list[DumpModule], stage: str | None = None) -> Matching:
    """Pair modules by name and stage. Two lone modules are compared whatever their names (the user chose
    both files). `stage` None keeps, per module name, the most optimised stage both sides have; "all"
    keeps every stage; a stage name keeps that stage."""
    if len(old) == 1 and len(new) == 1:
        return Matching([(old[0], new[0])], [], [])
    if stage not in (None, "all"):
        old = [m for m in old if m.stage == stage]
        new = [m for m in new if m.stage == stage]
    a, b = _key(old), _key(new)
    pairs = [(a[k], b[k]) for k in a if k in b]
    only_old = [a[k] for k in a if k not in b]
    only_new = [b[k] for k in b if k not in a]
    if stage is None:
        pairs = _most_optimised(pairs)
        matched_names = {o.name for o, _ in pairs}
        # A module whose name matched at some stage is not "only in" one side because of another stage.
        only_old = _unmatched_names(only_old, matched_names)
        only_new = _unmatched_names(only_new, matched_names)
    return Matching(pairs, only_old, only_new)


def _rank(stage: str | None) -> int:
    return STAGES.index(stage) if stage in STAGES else -1


def _most_optimised(pairs: list[tuple[DumpModule, DumpModule]]) -> list[tuple[DumpModule, DumpModule]]:
    best: dict[str, int] = {}
    for o, _ in pairs:
        best[o.name] = max(best.get(o.name, -2), _rank(o.stage))
    return [(o, n) for o, n in pairs if _rank(o.stage) == best[o.name]]


def _unmatched_names(modules: list[DumpModule], matched: set[str]) -> list[DumpModule]:
    """One entry per unmatched name: its most optimised stage (the file a diff would have used)."""
    best: dict[str, DumpModule] = {}
    for m in modules:
        if m.name not in matched and (m.name not in best or _rank(m.stage) > _rank(best[m.name].stage)):
            best[m.name] = m
    return list(best.values())
