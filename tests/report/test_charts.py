"""`hloscan hbm --plot/--timeline/--breakdown` and `hloscan vmem --plot`: the data the charts draw equal the
figures `hbm`/`vmem --format json` print, read back from the drawn artists and the written files."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from corpus import CORPUS, FIXTURES, REPO, require_path
from hloscan.analyses.tpu import GENERATIONS
from hloscan.cli import main
from hloscan.hlo.loader import load_file
from hloscan.analyses.hbm import analyze_module, analyze_modules
from hloscan.analyses.vmem.kernels import estimate_module
from hloscan.report import charts
from hloscan.report.timeline import hbm_timeline
from hloscan.report.vmem_bars import kernel_bars

HBM = FIXTURES / "hbm"
REAL = CORPUS / "tpu-oracle" / "real"
HBM_CASES = ["v5e__hbm__train_scan_L42_d1536_x1.25", "v5e__hbm__decode_B8_smax134144_x1.6",
             "v5e__hbm__train_scan_L16_d1536_x0.6"]
KERNEL_CASE = "v5e__pallas__flash_fwd_q2048_km2048_k2048"  # E1001 on the real compiler


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def hbm_json(path, *extra) -> list[dict]:
    _, out = run("hbm", str(path), "--format", "json", *extra)
    return json.loads(out[out.index("{"):])["modules"]


def artist(fig, gid):
    for ax in fig.axes:
        for a in [*ax.lines, *ax.collections, *ax.patches]:
            if a.get_gid() == gid:
                return a
    raise AssertionError(f"no artist {gid!r}")


def hbm_inputs():
    paths = [HBM / "big.after_optimizations.txt", HBM / "loop.after_optimizations.txt",
             HBM / "predict.before_optimizations.txt"]
    if REAL.exists():
        paths += [REAL / c / f"{s}_optimizations.txt" for c in HBM_CASES for s in ("after", "before")]
    return paths


@pytest.mark.parametrize("path", hbm_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chart_peak_and_capacity_are_hbm_figures(path, tmp_path):
    """The chart marks hbm's peak_bytes and the generation's capacity; the stacked curve plus the named
    adjustment is that peak; both breakdowns add up to it; the CSV and JSON timelines say the same."""
    require_path(path)
    expected = hbm_json(path, "--tpu", "v5e")
    assert len(expected) == 1
    want = expected[0]
    module = load_file(str(path)).modules[0]
    tl = hbm_timeline(module, analyze_modules([module], str(path), "v5e")[0])  # as hbm: reports read
    assert tl.peak_bytes == want["peak_bytes"]
    assert tl.capacity_bytes == GENERATIONS["v5e"].hbm_capacity == want["capacity_bytes"]
    assert tl.peak_instruction == want["peak_instruction"]
    assert max(tl.total(p) for p in range(tl.positions)) + tl.adjustment_bytes == want["peak_bytes"]
    if want["kind"] == "predicted":
        assert tl.adjustment_bytes == 0  # the curve is the prediction's own sweep
    if want["kind"] == "simulated":
        assert tl.adjustment_bytes >= 0  # only the heap's holes
    for rows in (tl.by_op_name, tl.by_source):
        assert sum(s.bytes for s in rows) == want["peak_bytes"]

    fig = charts.hbm_figure(tl)
    assert list(artist(fig, "capacity").get_ydata()) == [want["capacity_bytes"]] * 2
    peak = artist(fig, "peak")
    assert list(peak.get_ydata()) == [want["peak_bytes"]] and list(peak.get_xdata()) == [tl.peak_position]
    top = artist(fig, "total")
    assert max(top.get_ydata()) == tl.curve_peak_bytes  # the drawn curve reaches the sweep's maximum

    svg, csv_out, js = tmp_path / "t.svg", tmp_path / "t.csv", tmp_path / "t.json"
    code, _ = run("hbm", str(path), "--tpu", "v5e", "--plot", str(svg), "--timeline", str(csv_out))
    assert code in (0, 1)
    ids = {e.get("id") for e in ET.parse(svg).iter()}
    assert {"capacity", "peak", "band-temporaries", "total"} <= ids
    rows = list(csv.DictReader(io.StringIO(csv_out.read_text())))
    assert len(rows) == tl.positions
    assert max(int(r["total"]) for r in rows) + tl.adjustment_bytes == want["peak_bytes"]
    run("hbm", str(path), "--tpu", "v5e", "--timeline", str(js))
    data = json.loads(js.read_text())
    assert data["peak_bytes"] == want["peak_bytes"] and data["capacity_bytes"] == want["capacity_bytes"]
    assert len(data["series"]["temporaries"]) == tl.positions


def test_png_is_written(tmp_path):
    out = tmp_path / "hbm.png"
    code, _ = run("hbm", str(HBM / "big.after_optimizations.txt"), "--plot", str(out))
    assert code == 1  # E1000, as without --plot
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_breakdown_names_source_lines():
    code, out = run("hbm", str(HBM / "loop.after_optimizations.txt"), "--breakdown")
    assert "by Python source line" in out and "model.py:12" in out and "jit(f)/while" in out


def test_loop_body_curve(tmp_path):
    """--loop cuts the timeline to the while body's positions and splits the body's own temporaries out."""
    path = HBM / "loop.after_optimizations.txt"
    module = load_file(str(path)).modules[0]
    result = analyze_module(module, str(path), None)
    tl = hbm_timeline(module, result, loop="w")
    lo, hi = tl.window
    assert {tl.instructions[p][0] for p in range(lo, hi)} <= {"body", "cond"}
    assert tl.instructions[hi][1] == "w"
    assert len(tl.body_temporaries) == hi - lo + 1 and max(tl.body_temporaries) > 0
    assert tl.peak_bytes == max(tl.total(p) for p in range(lo, hi + 1))
    out = tmp_path / "loop.svg"
    assert run("hbm", str(path), "--loop", "w", "--plot", str(out))[0] == 0
    assert {"band-body", "band-outside"} <= {e.get("id") for e in ET.parse(out).iter()}
    code, text = run("hbm", str(path), "--loop", "nope", "--plot", str(out))
    assert code == 2 and "no while instruction" in text


def test_bad_suffix_is_a_usage_error(tmp_path):
    code, out = run("hbm", str(HBM / "big.after_optimizations.txt"), "--plot", str(tmp_path / "x.jpg"))
    assert code == 2 and ".svg or .png" in out


def test_vmem_bars_are_vmem_figures(tmp_path):
    """Each bar's parts add up to `vmem --format json`'s estimate_bytes; its limit mark is limit_bytes."""
    path = require_path(REAL / KERNEL_CASE / "before_optimizations.txt")
    _, out = run("vmem", str(path), "--tpu", "v5e", "--format", "json")
    want = json.loads(out[out.index("{"):])["kernels"]
    module = load_file(str(path)).modules[0]
    bars = kernel_bars([(str(path), k) for k in estimate_module(module, "v5e", None)])
    assert [b.instruction for b in bars] == [k["instruction"] for k in want]
    fig = charts.vmem_figure(bars)
    for row, (bar, k) in enumerate(zip(bars, want)):
        assert sum(v for _, v in bar.parts) == k["estimate_bytes"]
        assert list(artist(fig, f"limit-{row}").get_xdata()) == [k["limit_bytes"]] * 2
        assert list(artist(fig, f"physical-{row}").get_xdata()) == [GENERATIONS["v5e"].physical] * 2
    assert any(b.exceeds for b in bars)  # the real compiler fails this kernel (E1001)
    svg = tmp_path / "v.svg"
    assert run("vmem", str(path), "--tpu", "v5e", "--plot", str(svg))[0] == 1
    assert "limit-0" in {e.get("id") for e in ET.parse(svg).iter()}


def test_missing_extra_is_a_clear_message_and_exit_2(tmp_path, monkeypatch):
    import hloscan.report.extra as extra

    real = extra.importlib.import_module

    def no_matplotlib(name, *a, **k):
        if name.split(".")[0] in ("matplotlib", "jinja2"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(extra.importlib, "import_module", no_matplotlib)
    for args in (("hbm", str(HBM / "big.after_optimizations.txt"), "--plot", str(tmp_path / "a.svg")),
                 ("report", str(FIXTURES / "demo" / "offload_output.hlo.txt"), "-o", str(tmp_path / "r.html"))):
        code, out = run(*args)
        assert code == 2 and 'pip install "hloscan[report]"' in out, out
    assert not (tmp_path / "a.svg").exists() and not (tmp_path / "r.html").exists()


def test_core_commands_do_not_import_the_extra():
    """check, hbm (without --plot) and vmem never load matplotlib or Jinja2."""
    code = ("import sys; from click.testing import CliRunner; from hloscan.cli import main; "
            f"r = CliRunner(); r.invoke(main, ['check', {str(FIXTURES / 'demo' / 'offload_output.hlo.txt')!r}]); "
            f"r.invoke(main, ['hbm', {str(HBM / 'loop.after_optimizations.txt')!r}, '--breakdown']); "
            "bad = [m for m in ('matplotlib', 'jinja2', 'numpy') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
