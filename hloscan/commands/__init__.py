"""Sub-commands beyond check/parse, one module per concern; each exposes register(group)."""

from __future__ import annotations

import importlib

import click

# Explicit list (greppable); each module defines `register(group: click.Group) -> None`.
COMMAND_MODULES = ("layout", "vmem", "rules", "explain", "graph", "hbm")


def register_all(group: click.Group) -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(group)
