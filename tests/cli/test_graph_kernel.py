"""`hloscan graph --finding N` on a Vmem finding draws the kernel with each operand's VMEM block."""

from __future__ import annotations

from click.testing import CliRunner

from corpus import FIXTURES
from hloscan.cli import main

FIXTURE = FIXTURES / "checks" / "HLO201" / "fires_f32_matmul_blocks_18mib.hlo.txt"


def test_kernel_graph_labels_blocks_and_total(tmp_path):
    out = tmp_path / "kernel.dot"
    result = CliRunner().invoke(main, ["graph", str(FIXTURE), "--finding", "1", "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    dot = out.read_text()
    assert "block f32[512x2048] x2 = 8,388,608 B VMEM" in dot
    assert "block f32[2048x512] x2 = 8,388,608 B VMEM" in dot
    assert "output 2: block f32[512x512] x2 = 2,097,152 B VMEM" in dot
    assert "scoped VMEM 18,874,368 B vs limit 16,777,216 B" in dot
    assert "HLO201 here" in dot
