"""`hloscan report`: one entry per finding, numbered as `hloscan check`; every string from a dump escaped
(also inside the graphviz diagrams); nothing active or external in the page; and the page in a real headless
Chromium: no console error, no request but the file itself, a screenshot."""

from __future__ import annotations

import json
import os
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from browser import Browser, find_chromium
from corpus import CORPUS, FIXTURES, require_path
from hloscan.cli import main
from hloscan.report.svg import clean_svg

DEMO = FIXTURES / "demo" / "offload_output.hlo.txt"
REAL = CORPUS / "tpu-oracle" / "real"
HOSTILE_SOURCE = "<script>window.pwned=1</script>.py"
HOSTILE_OP = "<img src=x onerror=window.pwned=2>"
HOSTILE_TARGET = "</svg><script>window.pwned=3</script>"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def check_json(*paths: str) -> list[dict]:
    _, out = run("check", *paths, "--format", "json")
    return json.loads(out[out.index("{"):])["findings"]


class Page(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def findings(self) -> list[dict]:
        return [a for t, a in self.tags if t == "article" and "finding" in (a.get("class") or "").split()]


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def hostile_dump(tmp_path: Path) -> Path:
    text = DEMO.read_text()
    text = text.replace('source_file="model.py" source_line=46', f'source_file="{HOSTILE_SOURCE}" source_line=46')
    text = text.replace('op_name="jit(train_step)/return"', f'op_name="{HOSTILE_OP}"')
    text = text.replace('custom_call_target="Sharding"', f'custom_call_target="{HOSTILE_TARGET}"')
    path = tmp_path / "hostile.hlo.txt"
    path.write_text(text)
    return path


def write_report(tmp_path: Path, *inputs: str, name: str = "report.html") -> Path:
    out = tmp_path / name
    code, text = run("report", *inputs, "-o", str(out))
    assert code in (0, 1), text
    return out


def assert_inert(page: Page) -> None:
    """No script, no event handler, no link or source that leaves the page."""
    assert not [t for t, _ in page.tags if t in ("script", "iframe", "object", "embed", "foreignobject", "link")]
    for tag, attrs in page.tags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        for key in ("href", "src", "xlink:href", "action"):
            value = attrs.get(key)
            assert value is None or value.startswith("#"), (tag, key, value)


def test_one_entry_per_finding_numbered_as_check(tmp_path):
    paths = [str(DEMO), str(FIXTURES / "hbm" / "big.after_optimizations.txt")]
    want = check_json(*paths)
    page = parse(write_report(tmp_path, *paths))
    entries = page.findings()
    assert len(entries) == len(want) >= 2
    assert [e["id"] for e in entries] == [f"finding-{n}" for n in range(1, len(want) + 1)]
    assert [e["data-code"] for e in entries] == [f["code"] for f in want]
    text = " ".join(page.text)
    for f in want:
        assert f["hint"] and f["hint"] in text  # each finding's hint
    assert "model.py:46" in text  # the Python source line
    assert_inert(page)


def test_dump_strings_are_escaped(tmp_path):
    dump = hostile_dump(tmp_path)
    want = check_json(str(dump))
    assert want and want[0]["source"]["file"] == HOSTILE_SOURCE
    out = write_report(tmp_path, str(dump))
    html = out.read_text(encoding="utf-8")
    page = parse(out)
    assert len(page.findings()) == len(want)
    assert_inert(page)
    assert "<script>" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;.py" in html
    text = " ".join(page.text)
    assert HOSTILE_SOURCE in text  # shown to the reader, as text
    # The custom-call target reached graphviz (a node label of the diagram) and came back as text, escaped.
    assert "<svg" in html and "window.pwned=3" in text


def test_clean_svg_removes_anything_active():
    hostile = ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x "y">]>'
               '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="a()">'
               '<script>b()</script><foreignObject><div>c</div></foreignObject>'
               '<a xlink:href="javascript:d()"><text id="t" onclick="e()">keep &lt;me&gt;</text></a>'
               '<image href="http://127.0.0.1/x.png"/><rect style="fill:url(http://127.0.0.1/p)" fill="url(#g)"/>'
               '<use href="#t"/></svg>')
    out = clean_svg(hostile, prefix="s1")
    for bad in ("script", "foreignObject", "onload", "onclick", "javascript", "http://127", "<image", "<a "):
        assert bad not in out, bad
    assert "keep &lt;me&gt;" in out and 'id="s1-t"' in out and 'href="#s1-t"' in out


def test_report_of_the_big_dump_is_small(tmp_path):
    """Pictures are sampled (at most charts.MAX_POINTS positions), so the report stays small."""
    from hloscan.report.charts import MAX_POINTS, sample
    from hloscan.report.timeline import Timeline

    tl = Timeline("p", "m", "s", "simulated", "v5e", False, 1, "ok", 10, 5, None, None, 0, 10, 0, None,
                  {"arguments": 0, "aliased": 0, "outputs": 0, "constants": 0}, [p % 7 for p in range(200_000)],
                  [("", "", 0)] * 200_000)
    xs = sample(tl)
    assert len(xs) <= MAX_POINTS + 3 and 5 in xs


# ---------------------------------------------------------------------------------------------- browser


def chromium() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def reports(tmp_path: Path) -> list[tuple[Path, int]]:
    """(report, findings) for the demo, a hostile dump, a failing HBM case and a failing kernel."""
    out = [(write_report(tmp_path, str(DEMO), name="demo.html"), len(check_json(str(DEMO))))]
    hostile = hostile_dump(tmp_path)
    out.append((write_report(tmp_path, str(hostile), name="hostile.html"), len(check_json(str(hostile)))))
    for case in ("v5e__hbm__train_scan_L42_d1536_x1.25", "v5e__pallas__flash_fwd_q2048_km2048_k2048"):
        folder = REAL / case
        if folder.exists() or os.environ.get("CI", "").lower() == "true":
            require_path(folder)
            out.append((write_report(tmp_path, str(folder), name=f"{case}.html"), len(check_json(str(folder)))))
    return out


def test_reports_in_headless_chromium(tmp_path):
    with Browser(chromium(), width=1280, height=900) as browser:
        for path, findings in reports(tmp_path):
            log = browser.open(path)
            assert log.errors() == [], (path.name, log.errors())
            assert log.requests == [path.resolve().as_uri()], (path.name, log.requests)
            assert browser.evaluate("document.querySelectorAll('article.finding').length") == findings
            assert browser.evaluate("document.scripts.length") == 0
            assert browser.evaluate("typeof window.pwned") == "undefined"
            assert browser.evaluate("document.querySelectorAll('svg').length") >= 1
            # The summary is at the top: the banner's verdict is in the first screen.
            assert browser.evaluate("document.querySelector('.banner').getBoundingClientRect().bottom") < 300
            width, height = png_size(browser.screenshot(max_height=1400))
            assert width == 1280 and 600 < height <= 1400


def test_the_browser_check_sees_requests_and_csp_violations(tmp_path):
    """The instrument works: a page that asks for a loopback URL is seen asking (the report's pages never
    ask), and under the report's CSP the browser blocks it and says so (a security error in the log)."""
    from hloscan.report.html import CSP

    free = tmp_path / "free.html"
    free.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    locked = tmp_path / "locked.html"
    locked.write_text(f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}">'
                      '</head><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    with Browser(chromium()) as browser:
        log = browser.open(free)
        assert "http://127.0.0.1:9/x.png" in log.requests
        log = browser.open(locked)
        assert log.blocked == ["csp"], log.blocked
        assert any("Content Security Policy" in e or "Content-Security-Policy" in e for e in log.errors()), log.errors()
