"""The `hloscan` command line: check (the default), parse, and the commands in hloscan.commands."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from . import __version__
from .engine import ScanResult, Selection, run_checks, selected_checks
from .finding import Severity
from .loader import LoadedFile, discover, load_file

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class DefaultCheckGroup(click.Group):
    """`hloscan PATH...` means `hloscan check PATH...` (like ruff and flake8 taking paths directly)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["check", *args]
        return super().resolve_command(ctx, args)


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hloscan")
def main() -> None:
    """Static analyzer for XLA HLO text dumps.

    Predicts host-offload output mismatches (E1200), scoped Vmem OOMs (E1001) and buffer-size
    mismatches (E0102) before you compile or run. `hloscan PATH...` is `hloscan check PATH...`.
    """


def load_all(paths: tuple[str, ...], strict: bool) -> list[LoadedFile]:
    """Load every input; a bad file is recorded and the others are still loaded."""
    loaded = []
    for path, skipped in discover(list(paths)):
        if skipped is None:
            loaded.append(load_file(path, strict))
    return loaded


# ---------------------------------------------------------------------- parse


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Run the full lark grammar over the whole text (validates every attribute).")
def parse(paths: tuple[str, ...], fmt: str, strict: bool) -> None:
    """Parse dumps and report their modules, or the first syntax error of each file."""
    status = EXIT_CLEAN
    for path, skipped in discover(list(paths)):
        if skipped is not None:
            if fmt == "text":
                click.echo(f"{path}: skipped ({skipped})")
            continue
        loaded = load_file(path, strict)
        if not loaded.ok:
            status = EXIT_ERROR
        if fmt == "json":
            click.echo(json.dumps(_parse_json(loaded)))
        elif loaded.ok:
            for module in loaded.modules:
                comps = len(module.computations)
                click.echo(f"{path}: module {module.name}: {comps} computation(s), {module.instruction_count} instruction(s)")
        else:
            click.echo(loaded.error.format(), err=True)
    sys.exit(status)


def _parse_json(loaded: LoadedFile) -> dict[str, Any]:
    error = None
    if loaded.error is not None:
        error = {"line": loaded.error.line, "col": loaded.error.col, "message": loaded.error.message}
    return {"path": loaded.path, "ok": loaded.ok, "modules": [_module_json(m) for m in loaded.modules], "error": error}


def _module_json(module) -> dict[str, Any]:
    entry = module.entry
    params = [inst.shape.to_text() if inst.shape else None for _, inst in sorted(entry.parameter_instructions.items())]
    root = entry.root
    return {
        "name": module.name,
        "computations": len(module.computations),
        "instructions": module.instruction_count,
        "entry": {"parameters": params, "result": root.shape.to_text() if root.shape else None},
    }


# ---------------------------------------------------------------------- check


def check_options(func):
    """Options shared by `check` and the commands that run checks."""
    decorators = [
        click.option("--tpu", type=click.Choice(["v4", "v5e", "v5p", "v6e", "v7x"]), default=None,
                     help="TPU generation for Vmem limits (default: v5e, and findings say it was assumed)."),
        click.option("--vmem-limit-kib", type=click.IntRange(1), default=None,
                     help="Scoped Vmem limit, as --xla_tpu_scoped_vmem_limit_kib."),
        click.option("--host-outputs", default=None,
                     help="Comma-separated entry output indices that are declared in host memory "
                          "(for jax `lowered.as_text()`, which carries no output memory kinds)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def check_option_values(tpu, vmem_limit_kib, host_outputs) -> dict[str, Any]:
    """Command-line values as the per-check options they stand for (keyed by check name)."""
    options: dict[str, dict[str, Any]] = {"_global": {}}
    if tpu is not None:
        options["_global"]["tpu"] = tpu
    if vmem_limit_kib is not None:
        options["_global"]["vmem_limit_kib"] = vmem_limit_kib
    if host_outputs is not None:
        try:
            options["_global"]["host_outputs"] = tuple(int(x) for x in host_outputs.split(",") if x.strip())
        except ValueError:
            raise click.BadParameter("expected comma-separated integers", param_hint="--host-outputs") from None
    return options


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--select", default="", help="Comma-separated codes, code prefixes or names to run.")
@click.option("--ignore", default="", help="Comma-separated codes, code prefixes or names to skip.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default="warning", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (still 2 when input could not be analysed).")
@click.option("--strict", is_flag=True, help="Parse with the full grammar (validates every attribute).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None)
@check_options
def check(paths, fmt, select, ignore, fail_on, exit_zero, strict, output, tpu, vmem_limit_kib, host_outputs) -> None:
    """Run the checks on dumps, dump folders or lit-test files."""
    from .reporters import REPORTERS

    options = check_option_values(tpu, vmem_limit_kib, host_outputs)
    selection = Selection(_split(select), _split(ignore))
    result = scan(paths, selection, options, strict)
    handle = open(output, "w", encoding="utf-8") if output else sys.stdout
    try:
        colour = output is None and fmt == "text" and sys.stdout.isatty()
        REPORTERS[fmt](result, handle, colour)
    finally:
        if output:
            handle.close()
    sys.exit(exit_code(result, Severity.parse(fail_on), exit_zero))


def _split(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def scan(paths, selection: Selection, options: dict[str, Any], strict: bool = False) -> ScanResult:
    checks = selected_checks(selection)
    result = ScanResult(checks_run=[c.code for c in checks])
    for loaded in load_all(tuple(paths), strict):
        result.files.append(loaded)
        for module in loaded.modules:
            result.findings.extend(run_checks(module, loaded.path, checks, options))
    return result


def exit_code(result: ScanResult, fail_on: Severity, exit_zero: bool) -> int:
    if result.incomplete:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in result.findings) else EXIT_CLEAN


def _register_commands() -> None:
    from .commands import register_all

    register_all(main)


_register_commands()
