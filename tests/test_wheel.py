"""The built wheel carries the grammar: install it outside the checkout and parse a dump with it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from corpus import REPO as ROOT

DUMP = """HloModule wheel_check, entry_computation_layout={(bf16[16,1280,40]{2,1,0:T(8,128)(2,1)})->bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}}

ENTRY %main (p: bf16[16,1280,40]) -> bf16[16,1280,40] {
  ROOT %p = bf16[16,1280,40]{2,1,0:T(8,128)(2,1)} parameter(0)
}
"""


def test_wheel_ships_grammar_and_parses_outside_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
        check=True,
    )
    (wheel,) = wheels.glob("hloscan-*.whl")
    assert "hloscan/grammars/hlo.lark" in zipfile.ZipFile(wheel).namelist()
    assert "hloscan/report/templates/report.html.j2" in zipfile.ZipFile(wheel).namelist()  # hloscan report

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
                   check=True)
    dump = tmp_path / "dump.hlo.txt"
    dump.write_text(DUMP)
    script = (
        "import hloscan, hloscan.hlo.grammar as g, sys;"
        f"assert hloscan.__file__.startswith({str(target)!r}), hloscan.__file__;"
        "from importlib.resources import files;"
        "assert files('hloscan').joinpath('grammars').joinpath('hlo.lark').is_file();"
        "from hloscan.hlo.loader import load;"
        f"m = load({str(dump)!r}, strict=True)[0];"
        "print(m.name, m.entry.root.shape)"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "wheel_check bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}"
