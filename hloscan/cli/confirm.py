"""`hloscan confirm` (and `hloscan check --confirm`): the static findings beside the real TPU compiler's verdict.

Needs the tpu extra (`pip install 'hloscan[tpu]'`) in this python or in `--python`; the compiles run in
worker processes, so this module (like the rest of hloscan) never imports jax.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Callable

import click

from hloscan.cli.main import (EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, config_options, family_flags, main,
                              require_writable, settings)
from hloscan.confirm.runner import DEFAULT_TIMEOUT
from hloscan.lint.files import atomic_write, json_safe, printable
from hloscan.reporters import json_reporter, sarif, text as text_reporter

if TYPE_CHECKING:
    from hloscan.confirm.module import ModuleConfirmation
    from hloscan.confirm.scan import Confirmation

MIB = 1 << 20


def confirm_options(func: Callable) -> Callable:
    """--topology / --python / --timeout, shared by `confirm`, `check --confirm` and `vmem --exact`."""
    func = click.option("--timeout", type=click.FloatRange(1), default=DEFAULT_TIMEOUT, show_default=True,
                        help="Seconds one compile may take; past it that module has no verdict (exit 2) and "
                             "the others are still compiled.")(func)
    func = click.option("--python", "python", type=click.Path(dir_okay=False), default=None,
                        help="A python with the tpu extra (jax + libtpu) to compile with [default: "
                             "$HLOSCAN_TPU_PYTHON, else this one].")(func)
    return click.option("--topology", default=None, metavar="GEN[:SHAPE]",
                        help="TPU topology to compile for (v5e, v5e:2x2, v5p:2x2x2, ...) [default: --tpu's "
                             "smallest slice with as many chips as the module has partitions].")(func)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="Write the report to this file.")
@confirm_options
@config_options
@family_flags
def confirm(paths: tuple[str, ...], fmt: str, output: str | None, topology: str | None, python: str | None,
            timeout: float, config_file: str | None, no_config: bool, **family_options) -> None:
    """Compile each module with the real TPU compiler (compile-only, no TPU) and compare.

    Reports the compiler's verdict for every module (from a dump folder, its before_optimizations file),
    each static finding confirmed or contradicted, each compiler error the checks missed (as the finding
    the matching rule gives), and the compiler's exact figures beside hloscan's estimates. Exit 0: every
    module compiled; 1: the compiler rejected one; 2: an input could not be read or compiled.
    """
    config = settings(config_file, no_config, family_options)
    sys.exit(run_confirm(paths, fmt, output, config, topology, python, timeout))


def run_confirm(paths, fmt: str, output: str | None, config, topology: str | None, python: str | None,
                timeout: float) -> int:
    """The whole command: shared with `check --confirm`. Its machinery is imported here, when asked for, so
    the other commands' start-up does not pay for it."""
    from hloscan.confirm.runner import NoTpuPython, tpu_python
    from hloscan.confirm.scan import confirm_paths
    from hloscan.confirm.topology import check_topology, generation_of

    tpu = config.global_options.get("tpu")
    if topology is not None:
        problem = check_topology(topology)
        if problem:
            raise click.BadParameter(problem, param_hint="--topology")
        tpu = tpu or generation_of(topology)
    if tpu is None:
        raise click.UsageError("confirm compiles for one TPU generation: give --tpu GEN (or --topology, or "
                               "`tpu` in the config file)")
    require_writable(output, "--output", paths)
    try:
        chosen = tpu_python(python)
    except NoTpuPython as exc:
        click.echo(f"hloscan: {exc}", err=True)
        return EXIT_ERROR
    done = confirm_paths(list(paths), config, chosen, tpu=tpu, topology=topology, timeout=timeout,
                         each=_say_no_verdict)
    for loaded in done.result.files:
        if not loaded.ok:
            click.echo(printable(loaded.error.format()), err=True)
    render = {"text": _render_text, "json": _render_json, "sarif": _render_sarif}[fmt]
    if output:
        with atomic_write(output) as handle:
            render(done, handle)
    else:
        render(done, sys.stdout)
    return exit_code(done)


def _say_no_verdict(m: "ModuleConfirmation") -> None:
    if m.failed:
        click.echo(printable(f"hloscan: {m.path}: module {m.module}: no verdict from the TPU compiler "
                             f"({m.result.status}): {m.result.error}"), err=True)


def exit_code(done: "Confirmation") -> int:
    if done.result.incomplete or done.failed or not done.modules:
        return EXIT_ERROR
    return EXIT_FINDINGS if done.rejected else EXIT_CLEAN


# ---------------------------------------------------------------------------------------------- text


def _render_text(done: "Confirmation", out) -> None:
    text_reporter.render(done.result, out, colour=False, summary=False)
    for m in done.modules:
        out.write("\n".join(text_reporter.clean(line) for line in module_text(m).splitlines()) + "\n")
    out.write(summary_line(done) + "\n")


def module_text(m: "ModuleConfirmation") -> str:
    r = m.result
    versions = ", ".join(f"{k} {v}" for k, v in r.versions.items() if v and k != "jaxlib")
    head = f"{m.path}: module {m.module} for {m.topology}"
    if m.failed:
        return f"{head}: NO VERDICT ({r.status}): {r.error}"
    devices = f"{r.device_count} x {r.device_kind}" if r.device_count > 1 else r.device_kind
    lines = [f"{head} ({devices}; {versions}): TPU compiler verdict {m.verdict.label} "
             f"(compile {r.compile_s:.1f} s, {r.wall_s:.1f} s with start-up)"]
    v = m.verdict
    if v.size_bytes is not None:
        what = f"%{v.instruction} needs" if v.instruction else "needs"
        lines.append(f"  compiler: {what} {_mib(v.size_bytes)}, limit {_mib(v.limit_bytes or 0)} (as its message "
                     "rounds them)")
    lines.extend(f"  compiler figures not read: {problem}" for problem in r.unread)
    counts = {s: m.statuses.count(s) for s in ("confirmed", "contradicted", "not-reached", "missed")}
    lines.append("  static findings: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    for k in m.kernels:
        compiler = "no figure (the compile stopped before codegen)" if k.compiler_bytes is None else \
            f"compiler {_mib(k.compiler_bytes)}" + (f" ({k.error:+.1%})" if k.error is not None else "")
        lines.append(f"  kernel %{k.instruction} (line {k.line}): hloscan {_mib(k.static_bytes)} ({k.static_kind}), "
                     + compiler)
    if m.hbm is not None:
        h = m.hbm
        exact = [f"memory-usage report {_mib(h.report_total)}" if h.report_total else "",
                 f"memory_analysis {_mib(h.memory_analysis_peak)}" if h.memory_analysis_peak else ""]
        exact = [e for e in exact if e]
        err = f" ({h.error:+.1%})" if h.error is not None else ""
        lines.append(f"  HBM: hloscan {_mib(h.static_bytes)} ({h.static_kind}), compiler "
                     + (", ".join(exact) if exact else "no figure") + err)
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / MIB:.2f} MiB"


def summary_line(done: "Confirmation") -> str:
    modules = len(done.modules)
    rejected = len(done.rejected)
    statuses = [s for m in done.modules for s in m.statuses if s]
    parts = [f"confirm: {modules} module(s) compiled: {modules - rejected - len(done.failed)} accepted, "
             f"{rejected} rejected"]
    if done.failed:
        parts.append(f"{len(done.failed)} without a verdict")
    parts.append(", ".join(f"{statuses.count(s)} {s}" for s in ("confirmed", "contradicted", "not-reached",
                                                                   "missed")))
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- json / sarif


def confirm_json(done: "Confirmation") -> list[dict[str, Any]]:
    return [m.to_json() for m in done.modules]


def _render_json(done: "Confirmation", out) -> None:
    """The JSON report of `check`, plus "confirm": one entry per compiled module."""
    import io

    buffer = io.StringIO()
    json_reporter.render(done.result, buffer)
    doc = json.loads(buffer.getvalue())
    doc["confirm"] = confirm_json(done)
    json.dump(json_safe(doc), out, indent=2)
    out.write("\n")


def _render_sarif(done: "Confirmation", out) -> None:
    """The SARIF log of `check`, the compiler's word on each finding in its properties.data.tpu_compiler and
    the per-module verdicts and figures in the run's properties."""
    log = sarif.build_log(done.result)
    log["runs"][0]["properties"] = {"tpuCompiler": confirm_json(done)}
    json.dump(sarif.valid_text(log), out, indent=2, ensure_ascii=False)
    out.write("\n")


# ---------------------------------------------------------------------------------------------- vmem --exact

EXACT_NOTE = ("note: --exact compiles each kernel alone, its operands entry parameters. Memory-space assignment "
              "may place operands and results in VMEM (S(1)) otherwise than in the whole program, and a "
              "kernel gets no window for what is in VMEM: each figure says where the whole program placed "
              "them (from a post-optimisation dump, else hloscan's prediction) and the figure moved to that "
              "placement; `hloscan confirm` reports the whole-program figure itself.")


def exact_tpu_python(python: str | None) -> str:
    """The python with the tpu extra, or exit 2 before any work with what to install."""
    from hloscan.confirm.runner import NoTpuPython, tpu_python

    try:
        return tpu_python(python)
    except NoTpuPython as exc:
        click.echo(f"hloscan: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def exact_by_kernel(files, topology: str, python: str, timeout: float) -> dict:
    """{(path, instruction): ExactFigure} for every kernel of the loaded files."""
    from hloscan.confirm.exact import exact_figures

    out = {}
    for loaded in files:
        for module in loaded.modules:
            for figure in exact_figures(module, topology, python, timeout, loaded.path):
                out[(loaded.path, figure.instruction)] = figure
                if figure.status not in ("compiled", "compile_error"):
                    click.echo(printable(f"hloscan: {loaded.path}:{figure.line}: %{figure.instruction}: no exact "
                                         f"figure ({figure.status}): {figure.error}"), err=True)
    return out


def exact_text(figure, kernel) -> str:
    if figure is None:
        return ""
    if figure.scoped_bytes is None:
        why = (figure.error or figure.status).strip().splitlines()[0] if (figure.error or figure.status) else "?"
        return f"\n  exact (compiled alone): none: {why}"
    est = kernel.estimate.estimate_bytes
    err = (est - figure.scoped_bytes) / figure.scoped_bytes if figure.scoped_bytes else 0.0
    return (f"\n  exact (compiled alone, {figure.wall_s:.1f} s): {figure.scoped_bytes:,} B; "
            f"estimate {err:+.1%} off" + placement_text(figure))


def placement_text(figure) -> str:
    """Where the whole program placed the kernel's operands and results against where they were alone."""
    if figure.placement_source is None:
        return ""
    where = f"placement in the whole program ({figure.placement_source})"
    if not figure.differences:
        return f"\n  {where}: the same as alone, so this is the whole program's figure"
    lines = [f"\n  {where} differs from alone:"] + [f"\n    {d}" for d in figure.differences]
    if figure.placed_bytes == figure.scoped_bytes:
        lines.append("\n    these change no window: this is the whole program's figure")
    else:
        lines.append(f"\n    with the whole program's placement: {figure.placed_bytes:,} B (the figure alone "
                     f"{figure.placed_bytes - figure.scoped_bytes:+,} B of windows, as hloscan counts them)")
    return "".join(lines)


def exact_json(figure) -> dict[str, Any]:
    return {"status": figure.status, "scoped_bytes": figure.scoped_bytes, "error": figure.error,
            "wall_s": round(figure.wall_s, 2), "alone": True, "placement_source": figure.placement_source,
            "placement_differences": list(figure.differences), "placed_bytes": figure.placed_bytes}
