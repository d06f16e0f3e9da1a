"""Drives every click command registered at run time on given files, with tracebacks surfacing as failures."""

from __future__ import annotations

import json
import os
import traceback
from dataclasses import dataclass

import click
from click.testing import CliRunner

from hloscan.cli import main

# Exit codes hloscan documents: clean, findings, could not analyse (click's usage errors are 2 as well).
ALLOWED_EXITS = frozenset({0, 1, 2})
# Commands whose argument is not an input file; they are still run, with a fixed, harmless argument.
FIXED_ARGUMENTS = {"rule": ["HLO001"]}


@dataclass
class CliRun:
    """One invocation and its result."""

    args: list[str]
    exit_code: int
    output: str  # stdout only: stderr holds the human-readable errors
    crash: str | None = None

    def problem(self) -> str | None:
        if self.crash:
            return f"hloscan {' '.join(self.args)} raised:\n{self.crash}"
        if self.exit_code not in ALLOWED_EXITS:
            return f"hloscan {' '.join(self.args)} exited {self.exit_code}"
        return None


# Open bugs in other owners' code (see fixtures/fuzz/OPEN.md): (command, exception name). Tests skip these
# so that new crashes still fail CI; the campaign still counts them. Drop an entry once it is fixed.
KNOWN_OPEN: set[tuple[str, str]] = set()  # (command, exception) pairs of open bugs; none today


def is_known_open(run: "CliRun") -> bool:
    return bool(run.crash) and any(run.args[0] == cmd and exc in run.crash for cmd, exc in KNOWN_OPEN)


def invoke(args: list[str]) -> CliRun:
    """Run `hloscan ARGS` in-process; an exception escaping click is recorded, not swallowed."""
    runner = CliRunner()
    try:
        result = runner.invoke(main, args, catch_exceptions=False)
    except Exception:  # noqa: BLE001 - a traceback out of the CLI is exactly what we look for
        return CliRun(args, -1, "", traceback.format_exc(limit=-8))
    return CliRun(args, result.exit_code, result.stdout)


def _format_choices(command: click.Command) -> list[str | None]:
    for param in command.params:
        if param.name == "fmt" and isinstance(param.type, click.Choice):
            return list(param.type.choices)
    return [None]


def command_invocations(paths: list[str]) -> list[list[str]]:
    """Argument lists for every command present: each input file in each output format it offers."""
    out = []
    for name, command in sorted(main.commands.items()):
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        if name in FIXED_ARGUMENTS:
            base = FIXED_ARGUMENTS[name]
        elif any(a.nargs == -1 for a in arguments):
            base = list(paths)
        else:
            base = [paths[i % len(paths)] for i in range(len(arguments))]
        for fmt in _format_choices(command):
            out.append([name, *base] + (["--format", fmt] if fmt else []))
    out.extend([["check", *paths, "--strict", "--format", "json"], ["parse", *paths, "--strict", "--format", "json"]])
    return out


def run_all_commands(paths: list[str]) -> list[CliRun]:
    return [invoke(args) for args in command_invocations(paths)]


def json_problem(run: CliRun) -> str | None:
    """For `--format json|sarif` runs: the output must parse as JSON (one document, or one per line)."""
    if "--format" not in run.args or run.args[run.args.index("--format") + 1] not in ("json", "sarif"):
        return None
    text = run.output.strip()
    if not text:
        return None
    try:
        json.loads(text)
        return None
    except ValueError:
        pass
    try:
        for line in text.splitlines():
            json.loads(line)
        return None
    except ValueError as exc:
        return f"hloscan {' '.join(run.args)} printed malformed JSON: {exc}: {text[:300]!r}"


def write_input(folder: str, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path
