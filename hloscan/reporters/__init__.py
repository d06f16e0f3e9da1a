"""Reporters render a ScanResult; chosen by name. They read findings and registry metadata only."""

from __future__ import annotations

from typing import Callable, TextIO

from hloscan.lint.engine import ScanResult
from hloscan.reporters import concise, github, gitlab, json_reporter, junit, sarif, text

Reporter = Callable[[ScanResult, TextIO, bool], None]

REPORTERS: dict[str, Reporter] = {
    "text": text.render,
    "json": json_reporter.render,
    "sarif": sarif.render,
    "github": github.render,
    "concise": concise.render,
    "gitlab": gitlab.render,
    "junit": junit.render,
}
