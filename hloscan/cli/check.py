"""`hloscan check` (the default command) and `hloscan parse`."""

from __future__ import annotations

import functools
import sys
from typing import Any

import click

from hloscan.cli.main import (EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, colour_option, config_options, config_report,
                              family_flags, loading, main, require_selection, require_writable, settings, use_colour)
from hloscan.cli.confirm import confirm_options, run_confirm
from hloscan.cli.modules import MODULE_OPTION, STAGE_OPTION, module_matches, refuse_unmatched, stage_inputs
from hloscan.hlo.loader import LoadedFile, discover
from hloscan.lint import baseline
from hloscan.lint.cache import DEFAULT_MAX_MB, DIR_ENV, MAX_MB_ENV, ResultCache
from hloscan.lint.engine import ScanResult
from hloscan.lint.files import atomic_write, json_text, printable
from hloscan.lint.finding import Severity
from hloscan.lint.scan import default_jobs, scan
from hloscan.reporters import REPORTERS, statistics as statistics_reporter, text as text_reporter
from hloscan.reporters.text import skipped_summary


# ---------------------------------------------------------------------- parse

PARSE_MODE_HELP = ("Parse mode. --strict: the full grammar plus every attribute-value check XLA's parser makes. "
                   "--fast: the line-oriented fast path (attribute values checked lazily). Default: --strict "
                   "for files up to 256 KiB of text, --fast above (big machine-printed dumps).")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict/--fast", default=None, help=PARSE_MODE_HELP)
def parse(paths: tuple[str, ...], fmt: str, strict: bool | None) -> None:
    """Parse dumps and report their modules, or the first syntax error of each file (`-` reads standard input)."""
    status = EXIT_CLEAN
    modules = 0
    documents = []  # --format json: one document, {"version": 1, "files": [...]}, as every other command prints
    found = discover(list(paths))
    if fmt == "text":
        for path, skipped in found:
            if skipped is not None:
                click.echo(printable(f"{path}: skipped ({skipped})"))
    for loaded in loading([p for p, skipped in found if skipped is None], strict):
        path = loaded.path
        modules += len(loaded.modules)
        if not loaded.ok:
            status = EXIT_ERROR
        if fmt == "json":
            documents.append(_parse_json(loaded))
        elif loaded.ok:
            for module in loaded.modules:
                comps = len(module.computations)
                click.echo(printable(f"{path}: module {module.name}: {comps} computation(s), "
                                     f"{module.instruction_count} instruction(s)"))
        else:
            click.echo(printable(loaded.error.format()), err=True)
    if fmt == "json":
        click.echo(json_text({"version": 1, "files": documents}))
    if status == EXIT_CLEAN and modules == 0:
        click.echo(f"hloscan: nothing parsed: no HLO module in {_paths_label(paths)}", err=True)
        status = EXIT_ERROR
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
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(sorted(REPORTERS)), default="text", show_default=True)
@click.option("--select", default=None, help="Comma-separated codes, code prefixes (HLO2) or names to run.")
@click.option("--ignore", default=None, help="Comma-separated codes, code prefixes or names to skip.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning].")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (still 2 when input could not be analysed).")
@click.option("--strict/--fast", default=None, help=PARSE_MODE_HELP)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file (written whole or not at all; checked before scanning).")
@config_options
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False), default=None,
              help="Report only findings not accepted in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Accept all current findings: write them to this baseline file and exit.")
@click.option("--jobs", "-j", type=click.IntRange(1), default=None,
              help="Worker processes [default: all cores; never more than the cores or files]; 1 scans in this "
                   "process.")
@colour_option
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, progress or notes.")
@click.option("--show-config", is_flag=True, help="Print the config file and settings in force, then exit.")
@click.option("--no-cache", is_flag=True,
              help="Neither read nor write the result cache. By default the findings of a file unchanged since "
                   "an earlier run with the same hloscan and settings are read back from "
                   f"${DIR_ENV} (default $XDG_CACHE_HOME/hloscan/results, i.e. ~/.cache/hloscan/results; at "
                   f"most ${MAX_MB_ENV} MB, default {DEFAULT_MAX_MB}).")
@click.option("--statistics", is_flag=True, help="Print how many findings each rule raised instead of the findings.")
@MODULE_OPTION
@STAGE_OPTION
@click.option("--confirm", "confirm", is_flag=True,
              help="Also compile each module with the real TPU compiler (needs the tpu extra): `hloscan confirm`.")
@confirm_options
@family_flags
def check(paths, fmt, select, ignore, fail_on, exit_zero, strict, output, config_file, no_config, baseline_file,
          write_baseline, jobs, colour, quiet, show_config, no_cache, statistics, module_name, stage, confirm,
          topology, python, timeout, **family_options) -> None:
    """Run the checks on dumps, dump folders or lit-test files (`-` reads standard input).

    A re-run on unchanged files reads their findings from the result cache (see --no-cache): the same
    report as a fresh run, for the cost of reading and hashing the files."""
    config = settings(config_file, no_config, family_options, select, ignore)
    if show_config:
        click.echo(config_report(config))
        sys.exit(EXIT_CLEAN)
    if not paths:
        raise click.UsageError("Missing argument 'PATHS...' (a dump, a dump folder, or - for standard input).")
    require_selection(config)
    if confirm:
        if fmt not in ("text", "json", "sarif"):
            raise click.UsageError("--confirm reports as text, json or sarif")
        sys.exit(run_confirm(paths, fmt, output, config, topology, python, timeout))
    if config.path is not None and fmt == "text" and not quiet:  # machine formats: their stdout only
        click.echo(f"hloscan: using config {printable(str(config.path))}", err=True)
    inputs = stage_inputs(paths, stage)
    require_writable(output, "--output", inputs.files)
    require_writable(write_baseline, "--write-baseline", inputs.files)
    result = scan(paths, config, strict=strict, jobs=jobs or default_jobs(), progress=None if quiet else sys.stderr,
                  inputs=inputs, cache=None if no_cache else ResultCache.default())
    if module_name is not None:
        refuse_unmatched(_paths_label(paths), [m.name for f in result.files for m in f.modules], module_name)
        result.findings = [f for f in result.findings if module_matches(f.module, module_name)]
    if write_baseline:
        sys.exit(_write_baseline(write_baseline, result))
    if baseline_file:
        _apply_baseline(baseline_file, result, quiet)
    render = REPORTERS[fmt]
    if fmt == "text" and quiet:
        render = functools.partial(text_reporter.render, summary=False)
    if statistics:
        if fmt not in ("text", "json"):
            raise click.UsageError("--statistics prints text or JSON (--format text|json)")
        render = statistics_reporter.render_json if fmt == "json" else statistics_reporter.render_text
    if output:
        with atomic_write(output) as handle:
            render(result, handle, fmt == "text" and use_colour(colour, handle, to_file=True))
    else:
        render(result, sys.stdout, fmt == "text" and use_colour(colour, sys.stdout, to_file=False))
    if result.nothing_analysed:
        click.echo(f"hloscan: nothing analysed: no HLO module in {_paths_label(paths)}{_skipped_note(result)}",
                   err=True)
    threshold = Severity.parse(fail_on) if fail_on else (config.fail_on or Severity.WARNING)
    sys.exit(exit_code(result, threshold, exit_zero))


def _paths_label(paths: tuple[str, ...]) -> str:
    shown = ", ".join(printable(p) for p in paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _skipped_note(result: ScanResult) -> str:
    return f" ({skipped_summary(result.skipped)})" if result.skipped else ""


def _write_baseline(path: str, result: ScanResult) -> int:
    # A file that did not parse has no findings to accept: say so, or the baseline looks complete.
    for loaded in result.files:
        if loaded.error is not None:
            click.echo(printable(loaded.error.format()), err=True)
    crashed = [f for f in result.findings if f.code == "HLO900"]
    for f in crashed:
        click.echo(printable(f"{f.span}: {f.code} {f.message}"), err=True)
    count = baseline.write(path, result.findings)
    click.echo(f"hloscan: wrote {count} accepted finding(s) to {printable(path)}", err=True)
    if result.incomplete:
        failed = sum(1 for f in result.files if not f.ok)
        click.echo(f"hloscan: {failed} file(s) could not be parsed and {len(crashed)} check run(s) crashed; "
                   "their findings are not in the baseline (exit 2)", err=True)
        return EXIT_ERROR
    if result.nothing_analysed:
        click.echo(f"hloscan: nothing analysed: the baseline is empty{_skipped_note(result)}", err=True)
        return EXIT_ERROR
    return EXIT_CLEAN


def _apply_baseline(path: str, result: ScanResult, quiet: bool = False) -> None:
    try:
        accepted = baseline.read(path)
    except baseline.BaselineError as exc:
        click.echo(f"hloscan: {printable(str(exc))}", err=True)
        sys.exit(EXIT_ERROR)
    result.findings, matched = baseline.filter_new(result.findings, accepted)
    if matched and not quiet:
        click.echo(f"hloscan: {matched} finding(s) accepted by baseline {printable(path)}", err=True)


def exit_code(result: ScanResult, fail_on: Severity, exit_zero: bool) -> int:
    if result.incomplete or result.nothing_analysed:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in result.findings) else EXIT_CLEAN
