"""`hloscan report`: one self-contained HTML file with the findings (hints, source lines, diagrams), the HBM
timeline, the VMEM bars and the entry signatures of every module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import click

from hloscan.analyses.hbm import analyze_modules, compiled_for_another_backend
from hloscan.analyses.host_offload.walk import analyze as offload_walk
from hloscan.analyses.vmem.kernels import estimate_module, hint_text
from hloscan.cli.check import exit_code
from hloscan.cli.graph import _host_nodes, _walked_nodes, finding_view, to_dot
from hloscan.cli.layout import signature_of
from hloscan.cli.main import config_options, family_flags, main, require_selection, require_writable, settings
from hloscan.cli.modules import MODULE_OPTION, STAGE_OPTION, module_matches, refuse_unmatched, stage_inputs
from hloscan.hlo.dump_names import stage_of
from hloscan.hlo.ir import Module
from hloscan.lint.files import atomic_write, printable
from hloscan.lint.finding import Finding, Severity
from hloscan.lint.scan import scan
from hloscan.report.extra import MissingExtra, require
from hloscan.report.timeline import hbm_timeline
from hloscan.report.vmem_bars import kernel_bar

EXIT_ERROR = 2
DUMP_LINE_CHARS = 600


@main.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--output", "-o", "output", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write (one file: inline CSS and SVG, no script, no network).")
@click.option("--select", default=None, help="As for `hloscan check`.")
@click.option("--ignore", default=None, help="As for `hloscan check`.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning], as for `hloscan check`.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (still 2 when input could not be analysed).")
@click.option("--max-diagrams", type=click.IntRange(0), default=40, show_default=True,
              help="Draw the focused diagram of at most this many findings (they need Graphviz `dot`).")
@click.option("--no-reports", is_flag=True, default=False,
              help="As for `hloscan hbm`: ignore XLA's memory reports beside the dump.")
@click.option("--title", default=None, help="The report's title [default: hloscan report: FIRST-PATH].")
@MODULE_OPTION
@STAGE_OPTION
@config_options
@family_flags
def report_command(paths, output, select, ignore, fail_on, exit_zero, max_diagrams, no_reports, title, module_name,
                   stage, config_file, no_config, **family_options) -> None:
    """Write one HTML report: a summary, every finding with its hint, source line and diagram, the HBM
    chart and breakdowns, the VMEM bars and the entry signatures (needs the extra: pip install "hloscan[report]").

    Findings are numbered as `hloscan check` numbers them; the exit code is check's (0 clean, 1 findings at or
    above --fail-on, 2 an input could not be analysed).
    """
    started = time.monotonic()
    try:
        require("jinja2", "jinja2", "hloscan report")
        require("matplotlib", "matplotlib", "hloscan report")
    except MissingExtra as exc:
        _fail(str(exc))
    from hloscan.report import charts, html  # noqa: PLC0415 - needs the extra

    config = settings(config_file, no_config, family_options, select, ignore)
    require_selection(config)
    inputs = stage_inputs(paths, stage)
    require_writable(output, "--output", inputs.files)
    if not output.lower().endswith((".html", ".htm")):
        _fail(f"--output {printable(output)}: use a .html file")
    options = config.global_options
    tpu, vmem_limit_kib = options.get("tpu"), options.get("vmem_limit_kib")
    result = scan(paths, config, keep_modules=True, inputs=inputs, progress=sys.stderr)
    if module_name is not None:
        refuse_unmatched(" ".join(paths), [m.name for f in result.files for m in f.modules], module_name)
        result.findings = [f for f in result.findings if module_matches(f.module, module_name)]
    modules = {(f.path, m.name): m for f in result.files for m in f.modules if module_matches(m.name, module_name)}
    entries = []
    for loaded in result.files:
        chosen = [m for m in loaded.modules if module_matches(m.name, module_name)]
        entries.extend(_module_entries(html, charts, loaded.path, chosen, tpu, vmem_limit_kib, not no_reports))
    findings = _finding_entries(html, result.findings, modules, options.get("host_outputs"), max_diagrams)
    report = html.Report(
        title=title or f"hloscan report: {paths[0]}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else ""),
        inputs=[printable(p) for p in paths], findings=findings, modules=entries, files=len(result.files),
        files_failed=[(f.path, f.error.format()) for f in result.files if not f.ok],
        skipped=list(result.skipped), checks_run=list(result.checks_run))
    if len(result.findings) > max_diagrams:
        report.notes.append(f"diagrams of the first {max_diagrams} findings (--max-diagrams)")
    report.seconds = time.monotonic() - started
    text = html.render_report(report)
    with atomic_write(output) as handle:
        handle.write(text)
    click.echo(f"wrote {printable(output)} ({len(text.encode('utf-8')) / 1024:.0f} KiB, {len(findings)} finding(s), "
               f"{len(entries)} module(s)) in {time.monotonic() - started:.1f} s", err=True)
    if result.nothing_analysed:
        click.echo(f"hloscan: nothing analysed: no HLO module in {' '.join(paths)}", err=True)
    threshold = Severity.parse(fail_on) if fail_on else (config.fail_on or Severity.WARNING)
    sys.exit(exit_code(result, threshold, exit_zero))


def _fail(message: str) -> None:
    click.echo(f"hloscan report: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _module_entries(html, charts, path: str, chosen: list[Module], tpu, vmem_limit_kib, use_reports: bool) -> list:
    out = []
    tpu_modules = [m for m in chosen if not compiled_for_another_backend(m)]
    results = dict(zip((id(m) for m in tpu_modules), analyze_modules(tpu_modules, path, tpu, use_reports)))
    for module in chosen:
        entry = html.ModuleEntry(path, module.name, stage_of(path), module.instruction_count,
                                 signature=signature_of(module))
        hbm = results.get(id(module))
        if hbm is None:
            entry.hbm_note = ("compiled for CPU or GPU (its layouts carry no TPU tiles): no TPU HBM figure")
        else:
            entry.hbm = hbm
            entry.timeline = hbm_timeline(module, hbm)
            entry.hbm_chart = charts.render(charts.hbm_figure(entry.timeline), "svg").decode("utf-8")
        kernels = estimate_module(module, tpu, vmem_limit_kib)
        if kernels:
            entry.kernels = [kernel_bar(path, k) for k in kernels]
            entry.kernel_hints = {k.inst.name: h for k in kernels
                                  if k.estimate.verdict != "fits" and (h := hint_text(k.estimate))}
            entry.vmem_chart = charts.render(charts.vmem_figure(entry.kernels), "svg").decode("utf-8")
        out.append(entry)
    return out


def _finding_entries(html, findings: list[Finding], modules: dict, host_outputs, max_diagrams: int) -> list:
    dot = shutil.which("dot")
    walks: dict[int, object] = {}
    out = []
    for number, finding in enumerate(findings, 1):
        entry = html.FindingEntry(number, finding)
        module = modules.get((finding.span.path, finding.module))
        if module is not None and finding.instruction and finding.computation:
            comp = module.computations_by_name.get(finding.computation)
            inst = comp.by_name.get(finding.instruction) if comp is not None else None
            if inst is not None:
                text = inst.to_text()
                entry.dump_line = text if len(text) <= DUMP_LINE_CHARS else text[:DUMP_LINE_CHARS] + " \u2026"
        if module is None:
            entry.diagram_note = None
        elif number > max_diagrams:
            entry.diagram_note = f"no diagram past the first {max_diagrams} (--max-diagrams); " \
                                 f"hloscan graph PATH --finding {number} -o finding.svg draws it"
        elif dot is None:
            entry.diagram_note = "no diagram: Graphviz `dot` is not installed (apt-get install graphviz)"
        else:
            entry.diagram, entry.diagram_note = _diagram(module, finding, number, host_outputs, walks, dot)
        out.append(entry)
    return out


def _diagram(module: Module, finding: Finding, number: int, host_outputs, walks: dict, dot: str):
    """The finding's focused Graphviz diagram as SVG text (what `hloscan graph --finding N` draws), or a note."""
    try:
        analysis = walks.get(id(module))
        if analysis is None:
            analysis = walks[id(module)] = offload_walk(module, host_outputs)
        view = finding_view(module, finding, _host_nodes(analysis))
        if not view.nodes:
            return None, None  # a module-wide finding: nothing to focus on
        view.host_path = {**_walked_nodes(analysis), **view.host_path}
        view.source = f"finding [{number}]: {finding.span.path} (module {module.name})"
        proc = subprocess.run([dot, "-Tsvg"], input=to_dot(view).encode("utf-8"), capture_output=True,
                              timeout=120, check=False)
    except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
        return None, f"no diagram: {exc}"
    if proc.returncode != 0:
        return None, "no diagram: dot failed: " + proc.stderr.decode("utf-8", "replace").strip()[:300]
    return proc.stdout.decode("utf-8", "replace"), None
