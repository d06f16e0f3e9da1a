"""Puts tests/ on sys.path so test modules in any sub-folder import the shared helpers (corpus, messages, ...)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Tests use the registry directly, as the entry points (hloscan.check, the CLI) do: register every check first.
import hloscan.checks  # noqa: E402,F401
