"""`hloscan vmem`: every Pallas/Mosaic kernel's scoped-VMEM arithmetic, fitting or not."""

from __future__ import annotations

import sys
from typing import Any

import click

from hloscan.analyses.vmem.estimate import BlockEstimate
from hloscan.analyses.vmem.kernels import (TPU_CUSTOM_CALL, Kernel, estimate_json, estimate_module, figure_label,
                                           hint_text, limit_label, mib)
from hloscan.cli import pictures
from hloscan.cli.confirm import (EXACT_NOTE, confirm_options, exact_by_kernel, exact_json, exact_text,
                                 exact_tpu_python)
from hloscan.cli.main import (config_options, error_json, family_flags, load_reporting_errors, main, require_writable,
                              settings)
from hloscan.hlo.loader import LoadedFile
from hloscan.lint.files import json_text

EXIT_CLEAN, EXIT_E1001, EXIT_ERROR = 0, 1, 2


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help=pictures.PLOT_HELP +
              " One bar per kernel: windows, scratch, body, internal scratch and range against limit and VMEM.")
@click.option("--exact", is_flag=True, help="Also compile each kernel alone with the real TPU compiler (needs the "
              "tpu extra) and print its exact scoped VMEM beside the estimate.")
@confirm_options
@config_options
@family_flags
def vmem(paths: tuple[str, ...], fmt: str, plot: str | None, exact: bool, topology: str | None, python: str | None,
         timeout: float, config_file: str | None, no_config: bool, **family_options) -> None:
    """List every tpu_custom_call kernel with its scoped-VMEM estimate, limit and verdict.

    The TPU generation and limit come from the same settings as `hloscan check`: flags, else the config file.
    """
    options = settings(config_file, no_config, family_options).global_options
    tpu, vmem_limit_kib = options.get("tpu"), options.get("vmem_limit_kib")
    pictures.check_suffix("vmem", plot, (".svg", ".png"), "--plot")
    require_writable(plot, "--plot", paths)
    exact_python = exact_tpu_python(python) if exact else None
    # A big dump without a Mosaic kernel (a 48 MB after-optimization dump of a CPU or XLA-only program)
    # lists none: its ENTRY is all there is to parse.
    files, errors = load_reporting_errors(paths, entry_only_without=TPU_CUSTOM_CALL)
    rows = [(loaded.path, k) for loaded in files for module in loaded.modules
            for k in estimate_module(module, tpu, vmem_limit_kib)]
    figures = exact_by_kernel(files, topology or tpu or "v5e", exact_python, timeout) if exact else {}
    if plot:
        pictures.draw_vmem(rows, plot)
    if fmt == "json":
        click.echo(json_text({"kernels": [_kernel_json(p, k, figures) for p, k in rows],
                               "errors": [error_json(e) for e in errors]}, indent=2))
    else:
        for path, kernel in rows:
            click.echo(_kernel_text(path, kernel) + exact_text(figures.get((path, kernel.inst.name)), kernel))
        if exact:
            click.echo(EXACT_NOTE)
    sys.exit(_exit_code(rows, errors, figures))


def _exit_code(rows: list[tuple[str, Kernel]], errors: list[LoadedFile], figures: dict) -> int:
    if errors or any(f.status not in ("compiled", "compile_error") for f in figures.values()):
        return EXIT_ERROR
    return EXIT_E1001 if any(k.estimate.exceeds for _, k in rows) else EXIT_CLEAN


def _kernel_json(path: str, kernel: Kernel, figures: dict) -> dict[str, Any]:
    out = {"path": path, "instruction": kernel.inst.name, "line": kernel.inst.line,
           **estimate_json(kernel.estimate, kernel.tpu_assumed)}
    figure = figures.get((path, kernel.inst.name))
    if figure is not None:
        out["exact"] = exact_json(figure)
    return out


def _kernel_text(path: str, kernel: Kernel) -> str:
    est = kernel.estimate
    grid = "x".join("?" if d < 0 else str(d) for d in est.grid) or "-"  # ?: known only at run time (gmm groups)
    lines = [f"{path}:{kernel.inst.line}: %{kernel.inst.name} kernel {est.kernel_name or '?'} grid {grid}"]
    lines.extend("  " + _block_text(b) for b in est.blocks)
    if est.internal_bytes:
        why = "; ".join(n.rsplit(":", 1)[0] for n in est.notes if n.startswith("allowance"))
        lines.append(f"  internal scratch {est.internal_bytes:,} B" + (f" ({why})" if why else ""))
    lines.append(f"  = {figure_label(est)} {mib(est.estimate_bytes)}")
    if est.kind == "measured" and est.predicted_bytes is not None:
        lines.append(f"    (model predicts {mib(est.predicted_bytes)})")
    lines.append(f"  limit {mib(est.limit_bytes)} from {limit_label(est, kernel.tpu_assumed)} -> {est.verdict}")
    hint = hint_text(est) if est.verdict != "fits" else None
    if hint:
        lines.append(f"  hint: {hint}")
    return "\n".join(lines)


def _block_text(b: BlockEstimate) -> str:
    shape = f"{b.dtype}[{','.join(map(str, b.block_shape))}]"
    head = f"{b.role:<7} {b.index:>2} {shape:<22}"
    if not b.counted:
        return f"{head} not counted ({b.note or b.memory_space})"
    tile = f"T({b.tile[0]},{b.tile[1]})"
    note = f"  ({b.note})" if b.note else ""
    return (f"{head} {tile:<10} -> {b.padded_bytes:>12,} B x {b.buffers} = {b.total_bytes:>12,} B{note}")
