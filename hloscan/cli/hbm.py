"""`hloscan hbm`: HBM use per module (arguments, outputs, temporaries, peak) against the generation's capacity."""

from __future__ import annotations

import sys

import click

from hloscan.analyses.hbm import HbmResult, analyze_modules, compiled_for_another_backend, human
from hloscan.cli import pictures
from hloscan.cli.main import (config_options, error_json, family_flags, load_reporting_errors, main, require_writable,
                              settings)
from hloscan.cli.modules import MODULE_OPTION, STAGE_OPTION, module_matches, other_stage, refuse_unmatched
from hloscan.lint.files import json_text

EXIT_CLEAN, EXIT_E1000, EXIT_ERROR = 0, 1, 2
_KIND_TEXT = {"exact": "exact (XLA's memory-usage report)", "simulated": "simulated (scheduled dump, ~{:.0%})",
              "predicted": "predicted before compiling (estimate, ~{:.0%})"}


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-reports", is_flag=True, default=False,
              help="Ignore buffer-assignment/memory-usage-report files beside the dump: simulate or predict only.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help=pictures.PLOT_HELP +
              " HBM in use along the schedule by kind, capacity, the peak and its largest buffers.")
@click.option("--timeline", type=click.Path(dir_okay=False), default=None,
              help="Write the chart's data to OUT.csv (one row per position) or OUT.json (with the breakdowns).")
@click.option("--breakdown", is_flag=True, default=False,
              help="Print the peak split by op_name scope and by Python source line.")
@click.option("--loop", default=None, metavar="WHILE",
              help="With --plot/--timeline/--breakdown: the body of this while instruction only.")
@click.option("--group-depth", type=click.IntRange(1), default=3, show_default=True,
              help="op_name scopes kept when grouping the peak by op_name.")
@MODULE_OPTION
@STAGE_OPTION
@config_options
@family_flags
def hbm(paths: tuple[str, ...], fmt: str, no_reports: bool, plot: str | None, timeline: str | None, breakdown: bool,
        loop: str | None, group_depth: int, module_name: str | None, stage: str | None,
        config_file: str | None, no_config: bool, **family_options) -> None:
    """Per module: stage, kind of figure, arguments, outputs, aliased, temporaries, peak vs HBM capacity,
    verdict (E1000 / tight / ok) and the largest buffers live at the peak.

    A scheduled dump (after_optimizations) is simulated; a before_optimizations or jax-lowered dump is a
    prediction (an estimate). When XLA's memory-usage-report.txt sits beside the dump its figure is used
    (exact) unless --no-reports.
    """
    tpu = settings(config_file, no_config, family_options).global_options.get("tpu")
    pictures.check_suffix("hbm", plot, (".svg", ".png"), "--plot")
    pictures.check_suffix("hbm", timeline, (".csv", ".json"), "--timeline")
    for out in (plot, timeline):
        require_writable(out, "--plot" if out == plot else "--timeline", paths)
    files, errors = load_reporting_errors(paths)
    results: list[HbmResult] = []
    analysed: list = []  # (module, result) pairs, for the pictures
    other_backend: list[str] = []
    files = [f for f in files if not other_stage(f.path, stage)]
    refuse_unmatched(" ".join(paths), [m.name for f in files for m in f.modules], module_name)
    for loaded in files:
        chosen = [m for m in loaded.modules if module_matches(m.name, module_name)]
        tpu_modules = []
        for m in chosen:
            if compiled_for_another_backend(m):
                other_backend.append(f"{loaded.path}: module {m.name}")
            else:
                tpu_modules.append(m)
        module_results = analyze_modules(tpu_modules, loaded.path, tpu, use_reports=not no_reports)
        results.extend(module_results)
        analysed.extend(zip(tpu_modules, module_results))
    written: list[str] = []
    if plot or timeline or breakdown:
        tls = pictures.timelines(analysed, loop, group_depth)
        if timeline:
            written += pictures.write_timelines(tls, timeline)
        if plot:
            written += pictures.draw_hbm(tls, plot)
    if fmt == "json":
        click.echo(json_text({"version": 1, "modules": [r.to_json() for r in results],
                               "not_tpu": other_backend, "errors": [error_json(e) for e in errors]}, indent=2))
    else:
        for result in results:
            click.echo(render_text(result))
        for name in other_backend:
            click.echo(f"{name}: compiled for CPU or GPU (its layouts carry no TPU tiles): no TPU HBM verdict")
        if breakdown:
            click.echo("\n".join(pictures.breakdown_text(t) for t in tls))
    for out in written:
        click.echo(f"wrote {out}", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_E1000 if any(r.verdict == "E1000" for r in results) else EXIT_CLEAN)


def render_text(r: HbmResult) -> str:
    gen = r.generation + (" (assumed; use --tpu)" if r.generation_assumed else "")
    share = r.xla_total_bytes / r.capacity_bytes if r.capacity_bytes else 0.0
    lines = [f"{r.path}: module {r.module} ({r.stage}) on {gen}",
             f"  figure      {_KIND_TEXT[r.kind].format(r.expected_error)}",
             f"  devices     " + (f"{r.devices}: per-device figures ({r.sharding})" if r.devices > 1
                                  else "one (global figures)"),
             f"  arguments   {human(r.arguments_bytes):>9}  ({r.arguments_bytes:,} B)",
             f"  outputs     {human(r.outputs_bytes):>9}  ({r.outputs_bytes:,} B), aliased with arguments "
             f"{human(r.aliased_bytes)}",
             f"  temporaries {human(r.temporaries_bytes):>9}  ({r.temporaries_bytes:,} B) at the peak",
             f"  total       {human(r.xla_total_bytes):>9}  ({r.xla_total_bytes:,} B) = {share:.0%} of "
             f"{human(r.capacity_bytes)} available HBM -> {r.verdict}"]
    if r.verdict == "E1000" and r.certainly_over:
        lines.append(f"  over capacity by {human(r.over_bytes)}: XLA fails with 'Ran out of memory on HBM'")
    elif r.verdict == "E1000":
        lines.append(f"  over capacity by {human(r.over_bytes)}, less than the estimate's expected error "
                     f"({r.expected_error:.0%}): XLA may fail with 'Ran out of memory on HBM'")
    if r.live_at_peak:
        where = f" (at %{r.peak_instruction}, line {r.peak_line})" if r.peak_instruction else ""
        lines.append(f"  largest buffers live at the peak{where}:")
        for b in r.live_at_peak:
            src = f"  {b.source}" if b.source else ""
            op = f"  {b.op_name}" if b.op_name else ""
            lines.append(f"    {human(b.bytes):>9}  %{b.instruction}  {b.shape}{op}{src}")
    lines.extend(f"  note: {n}" for n in r.notes)
    return "\n".join(lines)
