"""The HBM timeline chart and the VMEM bars, drawn with matplotlib (extra `report`) from timeline.py and
vmem_bars.py data.

matplotlib because it does what a hand-written SVG would get wrong: stacked areas over 10^5 points, tick
placement, text measurement and layout, and the same figure as SVG (for the HTML report) or PNG. It runs
headless (the Agg canvas of a bare `Figure`, never pyplot, so no GUI backend and no global state). The data
are plotted in bytes (the axes' formatters print GiB/MiB), so a test reads the peak and capacity back from
the drawn artists (their `gid`s: "capacity", "peak", "limit-N", ...) exactly. Every string from a dump is
drawn with parse_math=False (a `$` in an op_name is not TeX) and SVG text is escaped by matplotlib's writer.
"""

from __future__ import annotations

import io
import math
from typing import Any

from hloscan.report.extra import require
from hloscan.report.timeline import KIND_LABELS, KINDS, Timeline
from hloscan.report.vmem_bars import PART_LABELS, KernelBar

GIB, MIB, KIB = 1 << 30, 1 << 20, 1 << 10
MAX_POINTS = 1500  # a longer schedule is drawn from the maximum of each slice (the peak is kept exactly)
COLOURS = {"arguments": "#4c78a8", "aliased": "#9ecae9", "outputs": "#54a24b", "constants": "#bab0ac",
           "temporaries": "#f58518", "body": "#e45756", "outside": "#f58518",
           "windows": "#4c78a8", "scratch": "#b279a2", "body_alloc": "#72b7b2", "internal": "#f58518",
           "measured": "#9d9da1"}
CAPACITY_COLOUR, PEAK_COLOUR = "#c0392b", "#111111"


def _mpl():
    require("matplotlib", "matplotlib", "drawing charts (--plot, hloscan report)")
    from matplotlib.figure import Figure  # noqa: PLC0415 - the extra is optional
    import matplotlib  # noqa: PLC0415

    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "hloscan", "font.size": 9,
                                "font.family": "DejaVu Sans",
                                "axes.spines.top": False, "axes.spines.right": False})
    return Figure


def unit_for(n: float) -> tuple[int, str]:
    """The unit an axis reaching `n` bytes is labelled in."""
    for size, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n >= size:
            return size, name
    return 1, "B"


def human(n: float) -> str:
    size, name = unit_for(abs(n))
    return f"{n / size:.2f} {name}" if size > 1 else f"{int(n)} B"


def _bytes_axis(axis, top: float) -> str:
    """Ticks at round numbers of the unit the axis is labelled in (the data stay in bytes)."""
    from matplotlib.ticker import FuncFormatter, MultipleLocator  # noqa: PLC0415 - the extra is optional

    size, name = unit_for(top)
    step = nice_step(top / size / 7) * size
    axis.set_major_locator(MultipleLocator(step))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v / size:,.10g}"))
    return name


def nice_step(raw: float) -> float:
    """The round step (1, 2, 2.5, 5 x 10^k) at or above `raw`."""
    if raw <= 0:
        return 1.0
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10 ** exp >= raw * 0.999:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def _shorten(text: str | None, width: int) -> str:
    if not text:
        return ""
    return text if len(text) <= width else "\u2026" + text[-(width - 1):]


# ------------------------------------------------------------------------------------------ HBM timeline


def sample(tl: Timeline, max_points: int = MAX_POINTS) -> list[int]:
    """Positions to draw: all of them, or the largest of each slice of a long schedule, always with the peak."""
    lo, hi = tl.window if tl.window else (0, tl.positions - 1)
    count = hi - lo + 1
    if count <= max_points:
        return list(range(lo, hi + 1))
    step = count / max_points
    picks = set()
    for k in range(max_points):
        a, b = lo + int(k * step), min(lo + int((k + 1) * step), hi + 1)
        if a < b:
            picks.add(max(range(a, b), key=lambda p: tl.temporaries[p]))
    picks.update((lo, hi, tl.peak_position))
    return sorted(picks)


def hbm_figure(tl: Timeline, width: float = 11.0):
    """The timeline as a matplotlib Figure: stacked bands, capacity, the marked peak, and the live ranges of
    the largest buffers live at the peak below."""
    Figure = _mpl()
    labelled = tl.labelled[:6]
    fig = Figure(figsize=(width, 6.4 if labelled else 4.6), layout="constrained")
    if labelled:
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1.6])
    else:
        top, bottom = fig.subplots(1, 1), None
    xs = sample(tl)
    bands = [(k, [tl.flat[k]] * len(xs)) for k in KINDS[:-1] if tl.flat[k]]
    if tl.body_temporaries is not None and tl.window:
        body = [tl.body_temporaries[x - tl.window[0]] for x in xs]
        outside = [max(tl.temporaries[x] - b, 0) for x, b in zip(xs, body)]
        bands += [("outside", outside), ("body", body)]
    else:
        bands.append(("temporaries", [tl.temporaries[x] for x in xs]))
    base = [0] * len(xs)
    ends = [xs[0], xs[-1]]
    for kind, values in bands:
        upper = [b + v for b, v in zip(base, values)]
        label = f"{KIND_LABELS[kind]} ({human(values[0])})" if kind in tl.flat else KIND_LABELS[kind]
        if kind in tl.flat:  # flat bands under the first varying one: a rectangle, two points
            top.fill_between(ends, [base[0]] * 2, [upper[0]] * 2, color=COLOURS[kind], alpha=0.9, linewidth=0,
                             label=label, gid=f"band-{kind}")
        else:
            top.fill_between(xs, base, upper, step="post", color=COLOURS[kind], alpha=0.9, linewidth=0,
                             label=label, gid=f"band-{kind}")
        base = upper
    top.plot(xs, base, drawstyle="steps-post", color="#333333", linewidth=0.6, gid="total")
    cap = tl.capacity_bytes
    assumed = " (assumed)" if tl.generation_assumed else ""
    top.axhline(cap, color=CAPACITY_COLOUR, linestyle="--", linewidth=1.4, gid="capacity",
                label=f"available HBM on {tl.generation}{assumed}: {human(cap)}")
    peak_x, peak_y = tl.peak_position, tl.peak_bytes
    if tl.adjustment_bytes > 0:
        width_x = max((xs[-1] - xs[0]) / 150, 0.6)
        top.bar([peak_x], [tl.adjustment_bytes], bottom=[tl.curve_peak_bytes], width=width_x, color="none",
                edgecolor=PEAK_COLOUR, hatch="////", linewidth=0.8, gid="adjustment",
                label=(f"XLA's report above the curve ({human(tl.adjustment_bytes)})" if tl.kind == "exact"
                       else f"heap holes at the peak ({human(tl.adjustment_bytes)})"))
    top.plot([peak_x], [peak_y], marker="v", markersize=9, color=PEAK_COLOUR, linestyle="none", gid="peak",
             label=f"peak {human(peak_y)}")
    where = f"%{tl.peak_instruction}" + (f" (line {tl.peak_line})" if tl.peak_line else "") \
        if tl.peak_instruction else "program start"
    span = (xs[-1] - xs[0]) or 1
    right = (peak_x - xs[0]) > span * 0.6
    highest = max(peak_y, max(base) if base else 0)
    off_scale = cap > 4 * highest  # a small program: the capacity would flatten its curve onto the axis
    ymax = (highest * 1.3 if off_scale else max(cap, highest) * 1.12) or 1
    top.set_ylim(0, ymax)
    low = peak_y < 0.55 * ymax
    top.annotate(f"peak {human(peak_y)}\nat {_shorten(where, 48)}", (peak_x, peak_y),
                 xytext=(-28 if right else 28, 10 if low else -6), textcoords="offset points",
                 ha="right" if right else "left", va="bottom" if low else "top", fontsize=9, fontweight="bold",
                 parse_math=False, annotation_clip=False,
                 arrowprops={"arrowstyle": "-", "color": "#555555", "linewidth": 0.8},
                 bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#999999", "alpha": 0.95})
    if off_scale:
        top.text(0.995, 0.985, f"available HBM {human(cap)} ({tl.generation}{assumed}) is above this chart: "
                 f"the peak uses {peak_y / cap:.1%} of it", transform=top.transAxes, ha="right", va="top",
                 color=CAPACITY_COLOUR, fontsize=8.5, fontweight="bold", parse_math=False)
    else:
        top.text(xs[0], cap, f" available HBM {human(cap)} ({tl.generation}{assumed})", color=CAPACITY_COLOUR,
                 ha="left", va="bottom", fontsize=8.5, fontweight="bold", parse_math=False,
                 bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
    unit = _bytes_axis(top.yaxis, ymax)
    top.set_ylabel(f"HBM in use ({unit})")
    top.axvline(peak_x, color=PEAK_COLOUR, linewidth=0.6, linestyle=":")
    fig.legend(loc="outside lower center", fontsize=8, frameon=False, ncols=4)
    top.margins(x=0)
    share = tl.peak_bytes / cap if cap else 0.0
    scope = f" - loop body of %{tl.loop}" if tl.loop else ""
    fig.suptitle(f"{tl.module} ({tl.stage}, {tl.kind}){scope}: peak {human(tl.peak_bytes)} = {share:.0%} of "
                 f"{human(cap)} on {tl.generation}{assumed} -> {tl.verdict}", fontsize=11, fontweight="bold",
                 parse_math=False, x=0.01, ha="left")
    axis = bottom if bottom is not None else top
    if bottom is not None:
        for row, b in enumerate(labelled):
            bottom.broken_barh([(b.start, max(b.end - b.start, 0.8))], (row + 0.02, 0.34),
                               color=COLOURS["temporaries"], alpha=0.9, gid=f"buffer-{row}")
            where = " \u00b7 ".join(x for x in (_shorten(b.op_name, 64), b.source) if x)
            text = f"{human(b.bytes)}  %{_shorten(b.instruction, 40)}" + (f"  \u00b7  {where}" if where else "")
            late = (b.start - xs[0]) > span * 0.5
            bottom.text(b.end if late else b.start, row - 0.04, text, va="bottom", ha="right" if late else "left",
                        fontsize=7.5, parse_math=False, clip_on=False)
        bottom.set_ylim(len(labelled) - 0.5, -0.5)
        bottom.set_yticks([])
        bottom.set_ylabel("largest live\nat the peak", fontsize=8)
        bottom.axvline(peak_x, color=PEAK_COLOUR, linewidth=0.6, linestyle=":")
        bottom.spines["left"].set_visible(False)
    axis.set_xlabel("program order (position in the schedule; loop bodies placed inline once)")
    axis.xaxis.get_major_locator().set_params(integer=True)
    return fig


# ------------------------------------------------------------------------------------------ VMEM bars


def vmem_figure(bars: list[KernelBar], width: float = 11.0):
    """One horizontal bar per kernel: its parts stacked, the expected range as a whisker, its limit (red) and
    physical VMEM (dashed) marked on its row."""
    Figure = _mpl()
    rows = max(len(bars), 1)
    fig = Figure(figsize=(width, 1.5 + 0.55 * rows), layout="constrained")
    ax = fig.subplots(1, 1)
    seen: set[str] = set()
    top = 0
    for row, bar in enumerate(bars):
        left = 0
        for part, size in bar.parts:
            if size <= 0:
                continue
            key = "body_alloc" if part == "body" else part
            ax.barh(row, size, left=left, height=0.56, color=COLOURS[key], gid=f"part-{row}-{part}",
                    hatch="//" if part == "internal" else None, edgecolor="white", linewidth=0.4,
                    label=PART_LABELS[part] if part not in seen else None)
            seen.add(part)
            left += size
        if bar.range_bytes is not None:
            low, high = bar.range_bytes
            hi_x = high if high is not None else max(left, low) * 1.25
            ax.plot([low, hi_x], [row, row], color="#333333", linewidth=1.2, gid=f"range-{row}",
                    label="expected range (allowance spread)" if "range" not in seen else None)
            ax.plot([low], [row], marker="|", color="#333333", markersize=10)
            ax.plot([hi_x], [row], marker="|" if high is not None else ">", color="#333333", markersize=8)
            seen.add("range")
            top = max(top, hi_x)
        if bar.predicted_bytes is not None:
            ax.plot([bar.predicted_bytes], [row], marker="D", color="#333333", markersize=5, linestyle="none",
                    gid=f"predicted-{row}", label="model's prediction" if "pred" not in seen else None)
            seen.add("pred")
        ax.plot([bar.limit_bytes] * 2, [row - 0.42, row + 0.42], color=CAPACITY_COLOUR, linewidth=2.2,
                gid=f"limit-{row}", label="scoped limit" if "limit" not in seen else None)
        ax.plot([bar.physical_bytes] * 2, [row - 0.42, row + 0.42], color="#111111", linewidth=1.2,
                linestyle="--", gid=f"physical-{row}", label="physical VMEM" if "phys" not in seen else None)
        seen.update(("limit", "phys"))
        verdict = {"fits": "fits", "tight": "tight", "E1001": "E1001 over the limit",
                   "vmem-oom": "over physical VMEM"}.get(bar.verdict, bar.verdict)
        ax.text(max(left, bar.limit_bytes), row - 0.34, f"  {human(bar.estimate_bytes)}  {verdict}",
                va="bottom", ha="left", fontsize=8, parse_math=False,
                color=CAPACITY_COLOUR if bar.exceeds else "#333333", fontweight="bold" if bar.exceeds else None)
        top = max(top, left, bar.limit_bytes, bar.physical_bytes)
    ax.set_yticks(range(len(bars)), [_shorten(b.label, 56) for b in bars], fontsize=8)
    for tick, bar in zip(ax.get_yticklabels(), bars):
        tick.set_parse_math(False) if hasattr(tick, "set_parse_math") else None
        if bar.exceeds:
            tick.set_color(CAPACITY_COLOUR)
    ax.set_ylim(rows - 0.5, -0.7)
    ax.set_xlim(0, top * 1.28 or 1)
    unit = _bytes_axis(ax.xaxis, top)
    ax.set_xlabel(f"scoped VMEM ({unit})")
    tpu = bars[0].tpu + (" (assumed)" if bars[0].tpu_assumed else "") if bars else "?"
    over = sum(1 for b in bars if b.exceeds)
    fig.suptitle(f"Pallas kernels on {tpu}: {len(bars)} kernel(s), {over} over their limit", fontsize=11,
                 fontweight="bold", x=0.01, ha="left", parse_math=False)
    ax.legend(loc="lower right", fontsize=7.5, framealpha=0.92, ncols=2)
    return fig


# ------------------------------------------------------------------------------------------ output


def render(fig, fmt: str, dpi: int = 110) -> bytes:
    """The figure as `svg` or `png` bytes (no date or software-version noise in the SVG metadata)."""
    buf = io.BytesIO()
    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
    fig.savefig(buf, format=fmt, dpi=dpi, metadata=metadata)
    return buf.getvalue()


def fmt_of(path: str) -> str:
    """`svg` or `png` from an output file name; ValueError for anything else."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix not in ("svg", "png"):
        raise ValueError(f"unsupported chart file {path!r}: use .svg or .png")
    return suffix
