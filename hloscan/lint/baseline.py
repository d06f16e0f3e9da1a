"""Accepted findings, keyed by Finding.baseline_key() with counts, so only new findings are reported."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterable

from hloscan.version import __version__
from hloscan.lint.files import atomic_write
from hloscan.lint.finding import Finding
from hloscan.lint.registry import TOOL_CODES

FORMAT_VERSION = 1
Key = tuple[str, str | None, str | None, str | None]


class BaselineError(ValueError):
    """An unreadable or malformed baseline file (exit code 2)."""


def acceptable(finding: Finding) -> bool:
    # A parse failure or a crashed check means the input was not analysed; that can never be accepted.
    return finding.code not in TOOL_CODES


def build(findings: Iterable[Finding]) -> Counter[Key]:
    return Counter(f.baseline_key() for f in findings if acceptable(f))


def write(path: str | Path, findings: Iterable[Finding]) -> int:
    """Write the baseline; returns the number of findings it accepts."""
    counts = build(findings)
    entries = [
        {"code": code, "module": module, "computation": comp, "instruction": inst, "count": n}
        for (code, module, comp, inst), n in sorted(counts.items(), key=lambda kv: tuple(x or "" for x in kv[0]))
    ]
    doc = {"version": FORMAT_VERSION, "tool": "hloscan", "tool_version": __version__, "findings": entries}
    with atomic_write(path) as handle:
        handle.write(json.dumps(doc, indent=2) + "\n")
    return sum(counts.values())


def read(path: str | Path) -> Counter[Key]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: baseline is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                            f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: baseline is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path}: not an hloscan baseline (version {FORMAT_VERSION})")
    counts: Counter[Key] = Counter()
    for i, entry in enumerate(doc["findings"]):
        try:
            key = (entry["code"], entry.get("module"), entry.get("computation"), entry.get("instruction"))
            count = int(entry.get("count", 1))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise BaselineError(f"{path}: findings[{i}] is malformed") from None
        counts[key] += count
    return counts


def filter_new(findings: list[Finding], accepted: Counter[Key]) -> tuple[list[Finding], int]:
    """The findings beyond what the baseline accepts, and how many were accepted.

    Each key may fire as many times as the baseline counted; findings are consumed in sorted order, so
    which duplicate counts as "new" is deterministic.
    """
    budget = Counter(accepted)
    new, matched = [], 0
    for f in findings:
        key = f.baseline_key()
        if acceptable(f) and budget[key] > 0:
            budget[key] -= 1
            matched += 1
        else:
            new.append(f)
    return new, matched
