"""Puts tests/ on sys.path so test modules in any sub-folder import the shared helpers (corpus, messages, ...)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Tests use the registry directly, as the entry points (hloscan.check, the CLI) do: register every check first.
import hloscan.checks  # noqa: E402,F401

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _own_result_cache(monkeypatch, tmp_path_factory):
    """Every test starts with an empty result cache of its own (HLOSCAN_CACHE_DIR, inherited by the hloscan
    processes it starts): a test that patches a check must not be answered with another test's findings,
    and the suite writes nothing into the user's ~/.cache."""
    monkeypatch.setenv("HLOSCAN_CACHE_DIR", str(tmp_path_factory.mktemp("hloscan-cache")))
