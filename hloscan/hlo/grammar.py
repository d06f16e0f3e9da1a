"""Loads the one HLO grammar (grammars/hlo.lark) into lark LALR parsers, one per start rule, once per process."""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

from lark import Lark

START_RULES = (
    "hlo_text",
    "shape",
    "sharding",
    "replica_groups",
    "padding_config",
    "dim_labels_only",
    "frontend_attributes_only",
    "json_dict_only",
)


def grammar_text() -> str:
    """The grammar source: packaged inside the wheel, or the checkout's top-level grammars/ folder."""
    packaged = resources.files("hloscan").joinpath("grammars").joinpath("hlo.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / "grammars" / "hlo.lark"
    return checkout.read_text(encoding="utf-8")


def _cache_path() -> str | bool:
    # NOTE: a pre-commit hook starts a fresh process per run, so caching the built LALR tables matters.
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        os.makedirs(os.path.join(base, "hloscan"), exist_ok=True)
    except OSError:
        return False
    return True


@functools.cache
def parser(start: str = "hlo_text") -> Lark:
    """A Lark LALR parser for one start rule, with positions (findings need line and column)."""
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=start,
        propagate_positions=True,
        maybe_placeholders=False,
        cache=_cache_path(),
    )
