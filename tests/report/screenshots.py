"""Regenerate docs/screenshots/: `hloscan report` of the demo dump, a failing HBM case and a failing Pallas
kernel of ../shared/corpus/tpu-oracle/real, photographed in headless Chromium (browser.py) and reduced to
small PNGs (Pillow, which matplotlib brings). Run: .venv/bin/python tests/report/screenshots.py"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from browser import Browser  # noqa: E402
from corpus import CORPUS, FIXTURES, REPO  # noqa: E402

OUT = REPO / "docs" / "screenshots"
REAL = CORPUS / "tpu-oracle" / "real"
# (file name, inputs, CSS pixels from the top to keep, element whose bottom ends the picture)
SHOTS = [
    ("report-demo.png", [FIXTURES / "demo" / "offload_output.hlo.txt"], 2300, "#hbm"),
    ("report-hbm-e1000.png", [REAL / "v5e__hbm__train_scan_L42_d1536_x1.25" / "after_optimizations.txt"], 2400,
     ".module-hbm"),
    ("report-vmem-e1001.png", [REAL / "v5e__pallas__flash_fwd_q2048_km2048_k2048" / "after_optimizations.txt"],
     2400, "#vmem"),
]
WIDTH, SCALE, COLOURS = 1200, 0.62, 128


def shrink(png: bytes) -> bytes:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.resize((int(image.width * SCALE), int(image.height * SCALE)), Image.LANCZOS)
    image = image.quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Browser(width=WIDTH, height=900) as browser:
        for name, inputs, limit, end in SHOTS:
            html = Path(tmp) / (name + ".html")
            subprocess.run([sys.executable, "-m", "hloscan", "report", *map(str, inputs), "--tpu", "v5e",
                            "--title", f"hloscan report: {inputs[0].parent.name}/{inputs[0].name}", "-o", str(html)],
                           cwd=REPO, check=False)
            log = browser.open(html)
            assert not log.errors(), log.errors()
            bottom = browser.evaluate(f"document.querySelector({end!r}).getBoundingClientRect().bottom")
            data = shrink(browser.screenshot(max_height=min(int(bottom) + 10, limit)))
            (OUT / name).write_bytes(data)
            print(f"{OUT / name}: {len(data) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
