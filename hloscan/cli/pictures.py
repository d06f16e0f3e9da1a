"""What `hloscan hbm --plot/--timeline/--breakdown` and `hloscan vmem --plot` write: files per module, text
tables, and the message when the optional extra `report` is missing (exit 2)."""

from __future__ import annotations

import os
import re
import sys
import tempfile

import click

from hloscan.analyses.hbm import HbmResult
from hloscan.hlo.ir import Module
from hloscan.lint.files import OutputError, atomic_write, json_text, printable
from hloscan.report.extra import MissingExtra
from hloscan.report.timeline import Timeline, hbm_timeline

EXIT_ERROR = 2

PLOT_HELP = "Draw a chart to OUT.svg or OUT.png (needs the extra: pip install \"hloscan[report]\")."


def fail(command: str, message: str) -> None:
    click.echo(f"hloscan {command}: {message}", err=True)
    sys.exit(EXIT_ERROR)


def check_suffix(command: str, path: str | None, allowed: tuple[str, ...], option: str) -> None:
    """A wrong extension is a usage error before any work (exit 2)."""
    if path is not None and not path.lower().endswith(allowed):
        fail(command, f"{option} {printable(path)}: use {' or '.join(allowed)}")


def per_module_paths(path: str, names: list[str]) -> list[str]:
    """One output file for one module; for several, OUT.<module>.ext beside OUT (module names made safe)."""
    if len(names) <= 1:
        return [path]
    stem, ext = os.path.splitext(path)
    seen: dict[str, int] = {}
    out = []
    for name in names:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or "module"
        seen[safe] = seen.get(safe, 0) + 1
        out.append(f"{stem}.{safe}{'' if seen[safe] == 1 else seen[safe]}{ext}")
    return out


def timelines(pairs: list[tuple[Module, HbmResult]], loop: str | None, group_depth: int) -> list[Timeline]:
    out = []
    for module, result in pairs:
        try:
            out.append(hbm_timeline(module, result, loop=loop, group_depth=group_depth))
        except KeyError:
            if len(pairs) == 1:
                fail("hbm", f"--loop {printable(loop or '')}: no while instruction of that name in the schedule "
                     f"of module {printable(module.name)}")
    if loop and not out:
        fail("hbm", f"--loop {printable(loop)}: no while instruction of that name in any module")
    return out


def write_timelines(tls: list[Timeline], path: str) -> list[str]:
    files = per_module_paths(path, [t.module for t in tls])
    for tl, out in zip(tls, files):
        text = tl.to_csv() if out.lower().endswith(".csv") else _json(tl)
        with atomic_write(out) as handle:
            handle.write(text)
    return files


def _json(tl: Timeline) -> str:
    return json_text(tl.to_json()) + "\n"


def write_figures(figures: list[tuple[str, object]], path: str) -> list[str]:
    """Each (name, figure) to its file; the format follows the extension."""
    from hloscan.report import charts  # noqa: PLC0415 - needs the extra

    files = per_module_paths(path, [n for n, _ in figures])
    fmt = charts.fmt_of(path)
    for (_, fig), out in zip(figures, files):
        write_bytes(out, charts.render(fig, fmt))
    return files


def write_bytes(path: str, data: bytes) -> None:
    """A binary file written whole or not at all (a temporary file renamed into place)."""
    folder = os.path.dirname(path) or "."
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from exc


def draw_hbm(tls: list[Timeline], path: str) -> list[str]:
    try:
        from hloscan.report import charts  # noqa: PLC0415 - needs the extra

        return write_figures([(t.module, charts.hbm_figure(t)) for t in tls], path)
    except MissingExtra as exc:
        fail("hbm", str(exc))
    return []


def breakdown_text(tl: Timeline, rows: int = 10) -> str:
    from hloscan.analyses.hbm import human  # noqa: PLC0415

    lines = [f"{tl.path}: module {tl.module}: the peak {human(tl.peak_bytes)} at position {tl.peak_position}"
             + (f" (%{tl.peak_instruction}, line {tl.peak_line})" if tl.peak_instruction else "")]
    for title, shares in ((f"by op_name (first {tl.group_depth} scopes)", tl.by_op_name),
                          ("by Python source line", tl.by_source)):
        lines.append(f"  {title}:")
        temps = [s for s in shares if s.kind == "temporaries"]
        rest = [s for s in shares if s.kind != "temporaries"]
        for s in temps[:rows]:
            lines.append(f"    {human(s.bytes):>9}  {s.buffers:>4} buffer(s)  {s.key}")
        if len(temps) > rows:
            more = temps[rows:]
            lines.append(f"    {human(sum(s.bytes for s in more)):>9}  {sum(s.buffers for s in more):>4} buffer(s)  "
                         f"({len(more)} more groups)")
        for s in rest:
            lines.append(f"    {human(s.bytes):>9}  {'':>4}            {s.key}")
    return printable("\n".join(lines))


def draw_vmem(rows: list, path: str) -> None:
    """One chart of every kernel's bar (`rows`: (path, Kernel) as `hloscan vmem` lists them)."""
    from hloscan.report.vmem_bars import kernel_bars  # noqa: PLC0415

    if not rows:
        fail("vmem", "--plot: no Pallas kernel (tpu_custom_call) in the input: nothing to draw")
    try:
        from hloscan.report import charts  # noqa: PLC0415 - needs the extra

        write_bytes(path, charts.render(charts.vmem_figure(kernel_bars(rows)), charts.fmt_of(path)))
    except MissingExtra as exc:
        fail("vmem", str(exc))
    click.echo(f"wrote {path}", err=True)
