"""`hloscan check` (the default command) and `hloscan parse`."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from hloscan.cli.main import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, config_options, family_flags, main, settings
from hloscan.hlo.loader import LoadedFile, discover, load_file
from hloscan.lint import baseline
from hloscan.lint.engine import ScanResult
from hloscan.lint.finding import Severity
from hloscan.lint.scan import default_jobs, scan
from hloscan.reporters import REPORTERS


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


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(sorted(REPORTERS)), default="text", show_default=True)
@click.option("--select", default=None, help="Comma-separated codes, code prefixes (HLO2) or names to run.")
@click.option("--ignore", default=None, help="Comma-separated codes, code prefixes or names to skip.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning].")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (still 2 when input could not be analysed).")
@click.option("--strict", is_flag=True, help="Parse with the full grammar (validates every attribute).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None)
@config_options
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False), default=None,
              help="Report only findings not accepted in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Accept all current findings: write them to this baseline file and exit.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None,
              help="Worker processes [default: all cores]; 1 scans in this process.")
@family_flags
def check(paths, fmt, select, ignore, fail_on, exit_zero, strict, output, config_file, no_config, baseline_file,
          write_baseline, jobs, **family_options) -> None:
    """Run the checks on dumps, dump folders or lit-test files."""
    config = settings(config_file, no_config, family_options, select, ignore)
    result = scan(paths, config, strict=strict, jobs=jobs or default_jobs(), progress=sys.stderr)
    if write_baseline:
        sys.exit(_write_baseline(write_baseline, result))
    if baseline_file:
        _apply_baseline(baseline_file, result)
    handle = open(output, "w", encoding="utf-8") if output else sys.stdout
    try:
        colour = output is None and fmt == "text" and sys.stdout.isatty()
        REPORTERS[fmt](result, handle, colour)
    finally:
        if output:
            handle.close()
    threshold = Severity.parse(fail_on) if fail_on else (config.fail_on or Severity.WARNING)
    sys.exit(exit_code(result, threshold, exit_zero))


def _write_baseline(path: str, result: ScanResult) -> int:
    count = baseline.write(path, result.findings)
    click.echo(f"hloscan: wrote {count} accepted finding(s) to {path}", err=True)
    return EXIT_ERROR if result.incomplete else EXIT_CLEAN


def _apply_baseline(path: str, result: ScanResult) -> None:
    try:
        accepted = baseline.read(path)
    except baseline.BaselineError as exc:
        click.echo(f"hloscan: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    result.findings, matched = baseline.filter_new(result.findings, accepted)
    if matched:
        click.echo(f"hloscan: {matched} finding(s) accepted by baseline {path}", err=True)


def exit_code(result: ScanResult, fail_on: Severity, exit_zero: bool) -> int:
    if result.incomplete:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in result.findings) else EXIT_CLEAN
