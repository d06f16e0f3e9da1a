"""The `hloscan` command line: check (the default), parse, and the commands in hloscan.commands."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import click

from . import __version__
from .config import TPU_GENERATIONS, Config, ConfigError, discover_config, load_config, unknown_selectors
from .engine import ScanResult, Selection, selected_checks
from .finding import Severity
from .loader import LoadedFile, discover, load_file
from .reporters import REPORTERS
from .runner import build_tasks, default_jobs, scan_tasks

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

PARSE_MODE_HELP = ("Parse mode. --strict: the full grammar plus every attribute-value check XLA's parser makes. "
                   "--fast: the line-oriented fast path (attribute values checked lazily). Default: --strict "
                   "for files up to 256 KiB of text, --fast above (big machine-printed dumps).")


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


def load_all(paths: tuple[str, ...], strict: bool | None) -> list[LoadedFile]:
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
@click.option("--strict/--fast", default=None, help=PARSE_MODE_HELP)
def parse(paths: tuple[str, ...], fmt: str, strict: bool | None) -> None:
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
        click.option("--tpu", type=click.Choice(TPU_GENERATIONS), default=None,
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
@click.option("--format", "fmt", type=click.Choice(sorted(REPORTERS)), default="text", show_default=True)
@click.option("--select", default=None, help="Comma-separated codes, code prefixes (HLO2) or names to run.")
@click.option("--ignore", default=None, help="Comma-separated codes, code prefixes or names to skip.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning].")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (still 2 when input could not be analysed).")
@click.option("--strict/--fast", default=None, help=PARSE_MODE_HELP)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="Read this config file instead of searching for pyproject.toml / hloscan.toml upwards.")
@click.option("--no-config", is_flag=True, help="Ignore config files.")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="Report only findings not accepted in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Accept all current findings: write them to this baseline file and exit.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None,
              help="Worker processes [default: all cores]; 1 scans in this process.")
@check_options
def check(paths, fmt, select, ignore, fail_on, exit_zero, strict, output, config_file, no_config, baseline,
          write_baseline, jobs, tpu, vmem_limit_kib, host_outputs) -> None:
    """Run the checks on dumps, dump folders or lit-test files."""
    config = _load_config(config_file, no_config)
    selection = Selection(_selectors(select, "--select", config.select), _selectors(ignore, "--ignore", config.ignore))
    options = config.options()
    options["_global"].update(check_option_values(tpu, vmem_limit_kib, host_outputs)["_global"])
    result = scan(paths, selection, options, strict, severities=config.severity, jobs=jobs or default_jobs(),
                  ignored_for=config.ignored_for, progress=sys.stderr, keep_modules=False)
    if write_baseline:
        sys.exit(_write_baseline(write_baseline, result))
    if baseline:
        _apply_baseline(baseline, result)
    handle = open(output, "w", encoding="utf-8") if output else sys.stdout
    try:
        colour = output is None and fmt == "text" and sys.stdout.isatty()
        REPORTERS[fmt](result, handle, colour)
    finally:
        if output:
            handle.close()
    threshold = Severity.parse(fail_on) if fail_on else (config.fail_on or Severity.WARNING)
    sys.exit(exit_code(result, threshold, exit_zero))


def _load_config(config_file: str | None, no_config: bool) -> Config:
    """The config in force; a bad one stops the run with exit code 2, naming the key."""
    if no_config:
        return Config()
    try:
        return load_config(config_file) if config_file else discover_config()
    except ConfigError as exc:
        click.echo(f"hloscan: config error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def _selectors(text: str | None, flag: str, configured: tuple[str, ...] | None) -> tuple[str, ...]:
    """Command-line selectors replace the config's; an unknown one is a usage error (exit 2)."""
    if text is None:
        return configured or ()
    selectors = _split(text)
    bad = unknown_selectors(selectors)
    if bad:
        raise click.BadParameter(f"unknown selector {bad[0]!r} (no check code, prefix or name matches it; "
                                 "see `hloscan rules`)", param_hint=flag)
    return selectors


def _write_baseline(path: str, result: ScanResult) -> int:
    from . import baseline

    count = baseline.write(path, result.findings)
    click.echo(f"hloscan: wrote {count} accepted finding(s) to {path}", err=True)
    return EXIT_ERROR if result.incomplete else EXIT_CLEAN


def _apply_baseline(path: str, result: ScanResult) -> None:
    from . import baseline

    try:
        accepted = baseline.read(path)
    except baseline.BaselineError as exc:
        click.echo(f"hloscan: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    result.findings, matched = baseline.filter_new(result.findings, accepted)
    if matched:
        click.echo(f"hloscan: {matched} finding(s) accepted by baseline {path}", err=True)


def _split(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def scan(paths, selection: Selection, options: dict[str, Any], strict: bool | None = None, *,
         severities: dict[str, Severity] | None = None, jobs: int = 1,
         ignored_for: Callable[[str], tuple[str, ...]] | None = None, progress=None,
         keep_modules: bool = True) -> ScanResult:
    """Scan files and dump folders: each check runs on the dump stage it declares (see hloscan.stages).

    With `keep_modules` (the default, for callers that inspect the IR) the scan stays in this process;
    otherwise `jobs` worker processes share the files.
    """
    checks = selected_checks(selection)
    tasks = build_tasks(paths, checks, ignored_for)
    return scan_tasks(tasks, options, severities, strict, jobs=jobs, keep_modules=keep_modules,
                      checks_run=[c.code for c in checks], progress=progress)


def exit_code(result: ScanResult, fail_on: Severity, exit_zero: bool) -> int:
    if result.incomplete:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in result.findings) else EXIT_CLEAN


def run() -> None:
    """The console-script entry: a one-shot process, so built IR may be frozen (parser.FREEZE_AFTER_BUILD)."""
    from . import parser

    parser.FREEZE_AFTER_BUILD = True
    main()


def _register_commands() -> None:
    from .commands import register_all

    register_all(main)


_register_commands()
