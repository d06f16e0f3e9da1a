"""Layout commands: `size` (physical bytes of shapes), `diff`, `memory` and `signature` of entry signatures."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from hloscan.cli.main import main
from hloscan.hlo.ir import Module
from hloscan.hlo.layout import SizeReport, UnsizedShapeError, physical_bytes, size_report
from hloscan.hlo.loader import load
from hloscan.analyses.layouts.memory_report import human_bytes, memory_report, render_memory
from hloscan.hlo.parser import HloSyntaxError, parse_shape
from hloscan.hlo.signature import Signature, diff_signatures, module_signature, render_diff, render_signature
from hloscan.hlo.source import source_location

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True)


def signature_of(module: Module) -> Signature:
    """The entry signature with Python source lines resolved from the instructions' metadata."""
    return module_signature(module, resolve_source=source_location)


def load_or_exit(path: str) -> list[Module]:
    """Every module of a dump file or folder; an unreadable input prints HLO001 and exits 2."""
    try:
        modules = load(path)
    except HloSyntaxError as exc:
        click.echo(exc.format(), err=True)
        sys.exit(EXIT_ERROR)
    if not modules:
        click.echo(f"{path}: no HLO module found", err=True)
        sys.exit(EXIT_ERROR)
    return modules


# ---------------------------------------------------------------------------------------------------- size


def _size_text(report: SizeReport, indent: str = "") -> list[str]:
    lines = [f"{indent}{report.shape_text}"]
    if report.leaves:
        for leaf in report.leaves:
            lines += _size_text(leaf, indent + "  ")
        lines.append(f"{indent}  total: {report.bytes} bytes, {report.unpadded_bytes} unpadded")
        return lines
    waste = f", padding {report.waste_bytes} bytes ({report.waste_fraction:.0%})" if report.waste_bytes else ""
    lines.append(f"{indent}  {report.bytes} bytes ({human_bytes(report.bytes)}), "
                 f"{report.unpadded_bytes} unpadded{waste}")
    lines += [f"{indent}  {p.describe()}, x{p.factor:.2f}" for p in report.padding]
    if not report.padding and report.bytes:
        lines.append(f"{indent}  no padding" + ("" if report.tiles else " (no tiles in the layout)"))
    lines += [f"{indent}  warning: {w}" for w in report.warnings]
    return lines


def _size_one(index: int, text: str) -> tuple[SizeReport | None, str | None, dict[str, Any] | None]:
    """(report, printed error, JSON error) for one SHAPE argument."""
    try:
        shape = parse_shape(text)
    except HloSyntaxError as exc:
        exc.path = f"<shape {index}>"
        error = {"code": exc.code, "message": exc.message, "line": exc.line, "col": exc.col}
        return None, exc.format(), error
    try:
        physical_bytes(shape)  # size_report never raises; this tells an unsized shape from a 0-byte one
    except UnsizedShapeError as exc:
        return None, f"<shape {index}>: cannot size {text}: {exc}", {"code": "unsized", "message": str(exc)}
    return size_report(shape, text), None, None


@click.command("size")
@click.argument("shapes", nargs=-1, required=True)
@FORMAT_OPTION
def size_command(shapes: tuple[str, ...], fmt: str) -> None:
    """Physical (tiled, padded) bytes of each SHAPE, e.g. 'bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}'.

    Quote shapes in the shell: braces and parentheses are special there.
    """
    status, rows = EXIT_CLEAN, []
    for index, text in enumerate(shapes, 1):
        report, printed, error = _size_one(index, text.strip())
        if report is None:
            status = EXIT_ERROR
            click.echo(printed, err=True)
            rows.append({"shape": text, "error": error})
        elif fmt == "json":
            rows.append(report.to_json())
        else:
            click.echo("\n".join(_size_text(report)))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
    sys.exit(status)


# ---------------------------------------------------------------------------------------------------- diff


def _pick_module(path: str, modules: list[Module]) -> Module:
    """The module to compare; a file with several modules uses the first and says so."""
    if len(modules) > 1:
        click.echo(f"{path}: {len(modules)} modules; comparing the first, {modules[0].name}", err=True)
    return modules[0]


def _diff_summary(diff) -> list[str]:
    layout, risks = diff.layout_changes, diff.e0102_risks
    if not layout:
        return ["no parameter's physical layout differs"]
    lines = [f"{len(layout)} parameter(s) with a different physical layout, {len(risks)} with a different size"]
    for d in layout:
        where = f"  [{d.new.source}]" if d.new.source else ""
        lines.append(f"  {d.new.label}: {d.old.bytes} -> {d.new.bytes} bytes{where}")
    return lines


@click.command("diff")
@click.argument("old", type=click.Path())
@click.argument("new", type=click.Path())
@FORMAT_OPTION
def diff_command(old: str, new: str, fmt: str) -> None:
    """Compare the entry signatures of two dumps (OLD -> NEW).

    Lists every parameter whose physical layout differs, with both sizes. Exits 1 when a buffer laid out
    for OLD would be rejected by NEW with E0102 (a parameter's byte size differs), 0 otherwise.
    """
    old_sig = signature_of(_pick_module(old, load_or_exit(old)))
    new_sig = signature_of(_pick_module(new, load_or_exit(new)))
    diff = diff_signatures(old_sig, new_sig)
    if fmt == "json":
        click.echo(json.dumps({"old_path": old, "new_path": new, **diff.to_json()}, indent=2))
    else:
        click.echo(render_diff(diff))
        click.echo("\n".join(_diff_summary(diff)))
    sys.exit(EXIT_FINDINGS if diff.e0102_risks else EXIT_CLEAN)


# ------------------------------------------------------------------------------------ memory and signature


@click.command("memory")
@click.argument("path", type=click.Path())
@FORMAT_OPTION
@click.option("--waste-threshold", type=click.FloatRange(0.0, 1.0), default=0.25, show_default=True,
              help="List buffers whose padding is at least this fraction of their size.")
@click.option("--top", type=click.IntRange(0), default=10, show_default=True,
              help="How many of the largest buffers to list.")
def memory_command(path: str, fmt: str, waste_threshold: float, top: int) -> None:
    """Entry buffers per memory space, the TOP largest, and the ones wasting most to tile padding."""
    reports = [memory_report(signature_of(m), top=top, waste_threshold=waste_threshold)
               for m in load_or_exit(path)]
    if fmt == "json":
        click.echo(json.dumps([{"path": path, **r.to_json()} for r in reports], indent=2))
    else:
        click.echo("\n\n".join(render_memory(r) for r in reports))
    sys.exit(EXIT_CLEAN)


@click.command("signature")
@click.argument("path", type=click.Path())
@FORMAT_OPTION
def signature_command(path: str, fmt: str) -> None:
    """Entry parameters and outputs: shapes with layouts, physical bytes, aliasing, Python source lines."""
    sigs = [signature_of(m) for m in load_or_exit(path)]
    if fmt == "json":
        click.echo(json.dumps([{"path": path, **s.to_json()} for s in sigs], indent=2))
    else:
        click.echo("\n\n".join(render_signature(s) for s in sigs))
    sys.exit(EXIT_CLEAN)


for _command in (size_command, diff_command, memory_command, signature_command):
    main.add_command(_command)
