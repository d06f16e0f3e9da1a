"""Test helper shared by the layout, E0102 and signature tests: corpus paths and shape parsing."""

from __future__ import annotations

from pathlib import Path

from corpus import CORPUS, require_path as require
from hloscan.hlo.ir import Module, Shape
from hloscan.hlo.parser import parse_shape as _parse_shape
from hloscan.hlo.parser import parse_text

LAYOUT_DIR = CORPUS / "tpu-oracle" / "layout"


def parse_shape(text: str) -> Shape:
    return _parse_shape(text)


def load_module(path: Path) -> Module:
    return parse_text(require(path).read_text(), str(path))[0]
