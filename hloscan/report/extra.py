"""The optional extra `report` (matplotlib, Jinja2): imported only when a picture or a report is asked for."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL = 'pip install "hloscan[report]"'


class MissingExtra(RuntimeError):
    """A library of the `report` extra is not installed; the message says what to install."""

    def __init__(self, library: str, purpose: str):
        super().__init__(f"{purpose} needs {library}, from the optional extra 'report': {INSTALL} "
                         f"(or pip install {library})")
        self.library = library


def require(module: str, library: str, purpose: str) -> ModuleType:
    """Import `module` (of the PyPI package `library`) or raise MissingExtra naming the install command."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(library, purpose) from None
