"""Reporters render a ScanResult; chosen by name. They read findings and registry metadata only."""

from __future__ import annotations

from typing import Callable, TextIO

from ..engine import ScanResult
from . import json_reporter, text

Reporter = Callable[[ScanResult, TextIO, bool], None]

REPORTERS: dict[str, Reporter] = {
    "text": text.render,
    "json": json_reporter.render,
}
