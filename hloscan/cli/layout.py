"""Layout commands: `size` (physical bytes of shapes), `diff`, `memory` and `signature` of entry signatures."""

from __future__ import annotations

import sys
from typing import Any

import click

from hloscan.analyses.layouts.memory_report import human_bytes, memory_report, render_memory
from hloscan.analyses.tpu import GENERATIONS, canonical_name
from hloscan.cli.main import main
from hloscan.cli.modules import DumpModule, MODULE_OPTION, load_modules_or_exit, match_modules, select_modules
from hloscan.hlo.dump_names import STAGES
from hloscan.hlo.ir import Layout, Module
from hloscan.hlo.layout import (SizeReport, UnsizedShapeError, default_tiling, minor_to_major, physical_bytes,
                                size_report, with_layout)
from hloscan.hlo.parser import HloSyntaxError, parse_shape
from hloscan.hlo.signature import (Signature, SignatureDiff, diff_signatures, module_signature, render_diff,
                                   render_signature)
from hloscan.hlo.source import source_location
from hloscan.lint.files import json_text, printable

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True)


def signature_of(module: Module) -> Signature:
    """The entry signature with Python source lines resolved from the instructions' metadata."""
    return module_signature(module, resolve_source=source_location)


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


def _size_one(index: int, text: str, tpu: str | None = None) -> tuple[SizeReport | None, str | None, dict[str, Any] | None]:
    """(report, printed error, JSON error) for one SHAPE argument; with `tpu`, an array without tiles gets
    XLA:TPU's default tiling first."""
    try:
        shape = parse_shape(text)
    except HloSyntaxError as exc:
        exc.path = f"<shape {index}>"
        error = {"code": exc.code, "message": exc.message, "line": exc.line, "col": exc.col}
        return None, exc.format(), error
    if tpu is not None and shape.is_array and shape.dims and (shape.layout is None or not shape.layout.tiles):
        order = minor_to_major(shape)
        tiles, e_bits = default_tiling(shape.element_type, tuple(shape.dims[d] for d in reversed(order)))
        space = shape.layout.memory_space if shape.layout is not None else 0
        shape = with_layout(shape, Layout(order, tiles=tiles, element_size_bits=e_bits, memory_space=space))
        text = shape.to_text()
    try:
        physical_bytes(shape)  # size_report never raises; this tells an unsized shape from a 0-byte one
    except UnsizedShapeError as exc:
        return None, f"<shape {index}>: cannot size {text}: {exc}", {"code": "unsized", "message": str(exc)}
    return size_report(shape, text), None, None


@click.command("size")
@click.argument("shapes", nargs=-1, required=True)
@FORMAT_OPTION
@click.option("--tpu", default=None, metavar="GEN",
              help="Give a shape without tiles XLA:TPU's default tiling (v4..v7x: the same default layouts were "
                   "measured on each) before sizing it.")
def size_command(shapes: tuple[str, ...], fmt: str, tpu: str | None) -> None:
    """Physical (tiled, padded) bytes of each SHAPE, e.g. 'bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}'.

    Quote shapes in the shell: braces and parentheses are special there. With --tpu GEN, 'bf16[16,1280,40]'
    (no layout) is sized as XLA:TPU lays it out by default.
    """
    if tpu is not None and canonical_name(tpu) is None:
        click.echo(f"hloscan size: unknown TPU generation {tpu!r} (known: {', '.join(GENERATIONS)})", err=True)
        sys.exit(EXIT_ERROR)
    status, rows = EXIT_CLEAN, []
    for index, text in enumerate(shapes, 1):
        report, printed, error = _size_one(index, text.strip(), tpu)
        if report is None:
            status = EXIT_ERROR
            click.echo(printed, err=True)
            rows.append({"shape": text, "error": error})
        elif fmt == "json":
            rows.append(report.to_json())
        else:
            click.echo("\n".join(_size_text(report)))
    if fmt == "json":
        click.echo(json_text(rows, indent=2))
    sys.exit(status)


# ---------------------------------------------------------------------------------------------------- diff


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
@MODULE_OPTION
@click.option("--stage", type=click.Choice([*STAGES, "all"]), default=None,
              help="Compare this dump stage [default: per module, the most optimised stage both sides have].")
def diff_command(old: str, new: str, fmt: str, module_name: str | None, stage: str | None) -> None:
    """Compare the entry signatures of two dumps (OLD -> NEW).

    Files, or --xla_dump_to folders: their modules are matched by name and stage (a dump holds every jit
    of the run, helpers such as jit_convert_element_type first), and modules on one side only are named.
    Lists every parameter whose physical layout differs, with both sizes. Exits 1 when a buffer laid out
    for OLD would be rejected by NEW with E0102 (a parameter's byte size differs), 0 otherwise.
    """
    olds = select_modules(old, load_modules_or_exit(old, entry_only=True), module_name)
    news = select_modules(new, load_modules_or_exit(new, entry_only=True), module_name)
    matching = match_modules(olds, news, stage)
    if not matching.pairs:
        click.echo(f"hloscan diff: no module of {old} matches one of {new} by name and stage; use --module "
                   "(and --stage) to choose", err=True)
        _echo_unmatched(matching, old, new, err=True)
        sys.exit(EXIT_ERROR)
    diffs = [(o, n, diff_signatures(signature_of(o.module), signature_of(n.module))) for o, n in matching.pairs]
    if fmt == "json":
        click.echo(json_text(_diff_json(old, new, diffs, matching), indent=2))
    else:
        # Say which modules were compared whenever it is not simply the two files given.
        titled = len(diffs) > 1 or any(o.path != old or n.path != new for o, n, _ in diffs)
        for number, (o, n, diff) in enumerate(diffs):
            if titled:
                click.echo(("\n" if number else "") + f"== {_pair_title(o, n)}")
            click.echo(render_diff(diff))
            click.echo("\n".join(_diff_summary(diff)))
        _echo_unmatched(matching, old, new)
    sys.exit(EXIT_FINDINGS if any(d.e0102_risks for _, _, d in diffs) else EXIT_CLEAN)


def _pair_title(o: DumpModule, n: DumpModule) -> str:
    stage = f" ({o.stage})" if o.stage else ""
    name = o.name if o.name == n.name else f"{o.name} -> {n.name}"
    return f"{name}{stage}: {o.path} -> {n.path}"


def _echo_unmatched(matching, old: str, new: str, err: bool = False) -> None:
    for side, path, modules in (("OLD", old, matching.only_old), ("NEW", new, matching.only_new)):
        if modules:
            click.echo(f"only in {side} ({path}): " + ", ".join(m.describe() for m in modules), err=err)


def _diff_json(old: str, new: str, diffs: list[tuple[DumpModule, DumpModule, SignatureDiff]],
               matching) -> dict[str, Any]:
    """`modules`: one entry per matched pair; a single pair's diff is also at the top level (as before)."""
    entries = [{"module": o.name, "new_module": n.name, "stage": o.stage, "old_file": o.path, "new_file": n.path,
                **d.to_json()} for o, n, d in diffs]
    doc: dict[str, Any] = {"old_path": old, "new_path": new}
    if len(diffs) == 1:
        doc.update(diffs[0][2].to_json())
    doc["modules"] = entries
    doc["only_in_old"] = [{"module": m.name, "stage": m.stage, "file": m.path} for m in matching.only_old]
    doc["only_in_new"] = [{"module": m.name, "stage": m.stage, "file": m.path} for m in matching.only_new]
    return doc


# ------------------------------------------------------------------------------------ memory and signature


@click.command("memory")
@click.argument("path", type=click.Path())
@FORMAT_OPTION
@MODULE_OPTION
@click.option("--waste-threshold", type=click.FloatRange(0.0, 1.0), default=0.25, show_default=True,
              help="List buffers whose padding is at least this fraction of their size.")
@click.option("--top", type=click.IntRange(0), default=10, show_default=True,
              help="How many of the largest buffers to list.")
def memory_command(path: str, fmt: str, module_name: str | None, waste_threshold: float, top: int) -> None:
    """Entry buffers per memory space, the TOP largest, and the ones wasting most to tile padding."""
    chosen = select_modules(path, load_modules_or_exit(path, entry_only=True), module_name)
    reports = [memory_report(signature_of(m.module), top=top, waste_threshold=waste_threshold) for m in chosen]
    if fmt == "json":
        click.echo(json_text([{"path": m.path, "stage": m.stage, **r.to_json()} for m, r in zip(chosen, reports)],
                              indent=2))
    else:
        click.echo("\n\n".join(_from(m) + render_memory(r) for m, r in zip(chosen, reports)))
    sys.exit(EXIT_CLEAN)


def _from(m: DumpModule) -> str:
    """Which file and stage a module's report is about: one folder holds a module at several stages."""
    return f"{printable(m.path)} ({m.stage or 'stage unknown'})\n"


@click.command("signature")
@click.argument("path", type=click.Path())
@FORMAT_OPTION
@MODULE_OPTION
def signature_command(path: str, fmt: str, module_name: str | None) -> None:
    """Entry parameters and outputs: shapes with layouts, physical bytes, aliasing, Python source lines."""
    chosen = select_modules(path, load_modules_or_exit(path, entry_only=True), module_name)
    sigs = [signature_of(m.module) for m in chosen]
    if fmt == "json":
        click.echo(json_text([{"path": m.path, "stage": m.stage, **s.to_json()} for m, s in zip(chosen, sigs)],
                              indent=2))
    else:
        click.echo("\n\n".join(_from(m) + render_signature(s) for m, s in zip(chosen, sigs)))
    sys.exit(EXIT_CLEAN)


for _command in (size_command, diff_command, memory_command, signature_command):
    main.add_command(_command)
