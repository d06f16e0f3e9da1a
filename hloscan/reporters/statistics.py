"""`check --statistics`: how many findings each rule raised, most first (ruff's --statistics)."""

from __future__ import annotations

import json
from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.reporters.text import summary_line


def counts(result: ScanResult) -> list[dict]:
    rows: dict[str, dict] = {}
    for f in result.findings:
        row = rows.setdefault(f.code, {"code": f.code, "name": f.name, "severity": f.severity.label,
                                       "xla_error": f.xla_error, "count": 0})
        row["count"] += 1
    return sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))


def render_text(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    for r in counts(result):
        xla = f" [{r['xla_error']}]" if r["xla_error"] else ""
        out.write(f"{r['count']:>6}  {r['code']}  {r['name']} ({r['severity']}){xla}\n")
    out.write(summary_line(result) + "\n")


def render_json(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    json.dump({"version": 1, "statistics": counts(result)}, out, indent=2)
    out.write("\n")
