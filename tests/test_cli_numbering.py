"""`hloscan check` numbers its text findings `[N]`, the N of `hloscan graph PATHS --finding N`, and `check`,
`vmem` and `graph` read the same `[tool.hloscan]` settings (issue 11, item 10)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscan.cli import main

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "fixtures" / "checks" / "HLO201" / "quiet_f32_matmul_blocks_4mib.hlo.txt"  # 4.5 MiB estimate
OFFLOAD = ROOT / "fixtures" / "checks" / "HLO101"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose pyproject sets tpu and a 4 MiB scoped limit (below the kernel's 4.5 MiB estimate)."""
    (tmp_path / "pyproject.toml").write_text('[tool.hloscan]\ntpu = "v6e"\nvmem_limit_kib = 4096\n')
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    shutil.copy(KERNEL, dumps / "k.hlo.txt")
    for name in ("fires_tuple_element.hlo.txt", "fires_nested_tuple.hlo.txt"):
        shutil.copy(OFFLOAD / name, dumps / name)
    monkeypatch.chdir(tmp_path)
    return dumps


def _run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_text_numbers_are_graph_finding_numbers(project):
    report = _run("check", "dumps")
    assert report.exit_code == 1
    numbered = re.findall(r"^(\S+):(\d+):\d+: \[(\d+)\] (HLO\d+) \w+(?: \[E\d+\])?: (.*)$", report.stdout, re.M)
    assert [int(n) for _, _, n, _, _ in numbered] == list(range(1, len(numbered) + 1))
    assert len(numbered) >= 3 and "hloscan graph PATH... --finding N" in report.stdout
    for path, _, number, code, message in numbered:
        out = project.parent / f"g{number}.dot"
        drawn = _run("graph", "dumps", "--finding", number, "-o", str(out))
        assert drawn.exit_code == 0, drawn.output
        title = re.search(r'^  label="(.*)";$', out.read_text(), re.M).group(1).replace("\\n", " ")
        assert f"finding [{number}]" in title and Path(path).name in title
        assert re.sub(r"\s+", " ", f"{code} ") in title and message.split(" (")[0][:40] in title.replace("  ", " ")


def test_check_vmem_graph_agree_under_config(project):
    check = _run("check", "--format", "json", "dumps/k.hlo.txt")
    (finding,) = json.loads(check.stdout)["findings"]
    assert finding["code"] == "HLO201" and finding["data"]["limit_bytes"] == 4096 * 1024
    assert "on v6e" in finding["message"] and "vmem_limit_kib setting" in finding["message"]
    vmem = json.loads(_run("vmem", "--format", "json", "dumps/k.hlo.txt").stdout)
    (kernel,) = vmem["kernels"]
    assert kernel["limit_bytes"] == finding["data"]["limit_bytes"]
    assert kernel["estimate_bytes"] == finding["data"]["estimate_bytes"] and kernel["verdict"] == "E1001"
    out = project.parent / "k.dot"
    assert _run("graph", "dumps/k.hlo.txt", "--finding", "1", "-o", str(out)).exit_code == 0
    assert f"vs limit {4096 * 1024:,} B" in out.read_text()
    # A flag still wins over the config, in all three.
    flagged = json.loads(_run("vmem", "--format", "json", "--vmem-limit-kib", "8192", "dumps/k.hlo.txt").stdout)
    assert flagged["kernels"][0]["verdict"] == "fits"
    assert _run("check", "--vmem-limit-kib", "8192", "dumps/k.hlo.txt").exit_code == 0
    assert _run("graph", "dumps/k.hlo.txt", "--vmem-limit-kib", "8192", "--finding", "1", "-o", str(out)).exit_code == 2


def test_graph_select_counts_like_check(project):
    report = _run("check", "--select", "HLO2", "dumps")
    assert re.search(r"k\.hlo\.txt:\d+:\d+: \[1\] HLO201", report.stdout)
    out = project.parent / "s.dot"
    assert _run("graph", "dumps", "--select", "HLO2", "--finding", "1", "-o", str(out)).exit_code == 0
    assert "HLO201" in out.read_text()
