"""One JSON document: {"version": 1, "files": [...], "findings": [...]}."""

from __future__ import annotations

import json
from typing import TextIO

from hloscan.lint.engine import ScanResult


def file_entry(loaded) -> dict:
    error = None
    if loaded.error is not None:
        error = {"line": loaded.error.line, "col": loaded.error.col, "message": loaded.error.message}
    return {"path": loaded.path, "ok": loaded.ok, "error": error}


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    doc = {
        "version": 1,
        "files": [file_entry(f) for f in result.files],
        "findings": [f.to_dict() for f in result.findings],
    }
    json.dump(doc, out, indent=2)
    out.write("\n")
